package drift

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
)

// TestGitBlobIDsAreGits: the blob id a fingerprint records for a worktree file is the
// one git computes, for SHA-1 repositories and SHA-256 ones.
func TestGitBlobIDsAreGits(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed (the runner needs it for worktrees)")
	}
	dir := t.TempDir()
	body := []byte("package calc\n\nfunc Add(a, b int) int { return a + b }\n")
	if err := os.WriteFile(filepath.Join(dir, "calc.go"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"sha1", "sha256"} {
		repo := filepath.Join(t.TempDir(), format)
		if out, err := exec.Command("git", "init", "-q", "--object-format="+format, repo).CombinedOutput(); err != nil {
			t.Fatalf("git init (%s): %v %s", format, err, out)
		}
		out, err := exec.Command("git", "-C", repo, "hash-object", filepath.Join(dir, "calc.go")).Output()
		if err != nil {
			t.Fatalf("git hash-object (%s): %v", format, err)
		}
		want := strings.TrimSpace(string(out))
		got, exists, err := HashOf(true, want).File(dir, "calc.go")
		if err != nil || !exists || got != want {
			t.Fatalf("%s: blob %s (exists %v, %v), git says %s", format, got, exists, err, want)
		}
	}
}

// TestCompareIsNotFooledByALink: a worker that replaces a verified file with a link to
// a copy of it (or deletes it, or brings back a file the task deleted) changed it; a
// missing workspace is ErrWorkspaceGone, not drift.
func TestCompareIsNotFooledByALink(t *testing.T) {
	ctx := context.Background()
	dir, elsewhere := t.TempDir(), t.TempDir()
	body := []byte("verified\n")
	sum := sha256.Sum256(body)
	must(t, os.WriteFile(filepath.Join(dir, "out.md"), body, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "keep.md"), body, 0o644))
	fp := &models.Fingerprint{Dir: dir, Files: []models.FingerprintFile{
		{Path: "out.md", Hash: hex.EncodeToString(sum[:])},
		{Path: "keep.md", Hash: hex.EncodeToString(sum[:])},
		{Path: "removed.go"}, // the task deleted it
	}}
	if changed, err := Compare(ctx, fp); err != nil || len(changed) != 0 {
		t.Fatalf("as verified: %v %v", changed, err)
	}
	must(t, os.WriteFile(filepath.Join(elsewhere, "out.md"), body, 0o644))
	must(t, os.Remove(filepath.Join(dir, "out.md")))
	must(t, os.Symlink(filepath.Join(elsewhere, "out.md"), filepath.Join(dir, "out.md")))
	must(t, os.WriteFile(filepath.Join(dir, "removed.go"), []byte("package x\n"), 0o644))
	changed, err := Compare(ctx, fp)
	if err != nil || !slices.Equal(changed, []string{"out.md", "removed.go"}) {
		t.Fatalf("a link and a file back: %v %v", changed, err)
	}
	fp.Dir = filepath.Join(dir, "gone")
	if _, err := Compare(ctx, fp); !errors.Is(err, ErrWorkspaceGone) {
		t.Fatalf("a gone workspace: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
