package runner

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	st, err := os.Stat(path)
	must(t, err)
	return st.Sys().(*syscall.Stat_t).Ino
}

// An empty temp dir becomes the next attempt's, without a directory being made or
// removed; one the attempt left something in, or one a confined attempt's escapees
// could still reach, is removed.
func TestTmpDirsRecycleOnlyEmptyDirs(t *testing.T) {
	root := t.TempDir()
	td := newTmpDirs(root, true)
	a, b, c := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "c")
	must(t, td.make(a))
	ino := inode(t, a)
	td.release(a)
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Fatalf("released dir still at its path: %v", err)
	}
	must(t, td.make(b))
	if inode(t, b) != ino {
		t.Fatal("the next attempt's dir is a new directory, not the spare")
	}
	must(t, os.WriteFile(filepath.Join(b, "left"), []byte("x"), 0o600))
	td.release(b)
	if td.spare.Take() != "" {
		t.Fatal("a dir an attempt left a file in was recycled")
	}
	if _, err := os.Stat(b); !os.IsNotExist(err) {
		t.Fatalf("a dir an attempt left a file in is still there: %v", err)
	}
	must(t, td.make(c))
	if ents, err := os.ReadDir(c); err != nil || len(ents) != 0 {
		t.Fatalf("new dir holds %v (%v)", ents, err)
	}
	td.release(c)

	off := newTmpDirs(root, false)
	d := filepath.Join(root, "d")
	must(t, off.make(d))
	off.release(d)
	if ents, _ := os.ReadDir(root); len(ents) != 1 { // c's spare, from td
		t.Fatalf("without recycling the dir stays: %v", ents)
	}
	td.removeSpares()
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Fatalf("spares left: %v", ents)
	}
}
