package handlers

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// TestChangedSinceCachedSeesARewrite: the answer for an unchanged output is
// remembered (not hashed again), and a rewrite of the same size whose mtime is set
// back to the verified one's is still seen as changed: the ctime is in the key.
func TestChangedSinceCachedSeesARewrite(t *testing.T) {
	ws := t.TempDir()
	path := filepath.Join(ws, "report.md")
	verified := []byte("the verified report\n")
	if err := os.WriteFile(path, verified, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(verified)
	fp := &models.Fingerprint{Dir: ws, Output: "report.md", Files: []models.FingerprintFile{{Path: "report.md", Hash: hex.EncodeToString(sum[:])}}}
	stat := func() os.FileInfo {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	fi := stat()
	time.Sleep(racyWindow(time.Now()) + 50*time.Millisecond) // out of the racy window: remembered
	if changedSinceCached(fp, fi) {
		t.Fatal("the verified file is reported changed")
	}
	stamp, ok := stampOf(fi)
	changedCache.Lock()
	_, known := changedCache.m[changedKey{dir: ws, output: "report.md", hash: fp.Files[0].Hash, file: stamp}]
	changedCache.Unlock()
	if ok && !known {
		t.Fatal("the answer for an unchanged file is not remembered")
	}
	// Same size, other bytes, the old mtime put back: only the ctime tells.
	if err := os.WriteFile(path, []byte("the planted report!\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if after := stat(); after.Size() != fi.Size() || !after.ModTime().Equal(fi.ModTime()) {
		t.Fatalf("the rewrite is not of the same size and mtime: %d %v", after.Size(), after.ModTime())
	}
	if !changedSinceCached(fp, stat()) {
		t.Fatal("a rewrite of the same size and mtime is not seen as changed")
	}
}
