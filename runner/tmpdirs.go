package runner

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/countersign/countersign/runner/internal/spares"
)

// tmpDirs hands attempts their private temp dirs, recycling the empty ones (see
// package spares for why).
//
// A directory is recycled only when nothing of the attempt that used it can still
// write to it: its processes are dead (the sandbox kills escapees, or nothing confined
// them in the first place, so there was no boundary to keep), and it is empty.
type tmpDirs struct {
	dir     string // where attempts' temp dirs and the spares are
	recycle bool
	spare   spares.Stack
}

// spareTmpPrefix starts the names of spare directories.
const spareTmpPrefix = ".spare-"

func newTmpDirs(dir string, recycle bool) *tmpDirs {
	return &tmpDirs{dir: dir, recycle: recycle, spare: spares.Stack{Dir: dir, Prefix: spareTmpPrefix, Max: 64}}
}

// removeSpares removes the spares an earlier runner left in dir.
func (t *tmpDirs) removeSpares() {
	ents, _ := os.ReadDir(t.dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), spareTmpPrefix) {
			os.RemoveAll(filepath.Join(t.dir, e.Name()))
		}
	}
}

// make creates path, an empty directory of mode 0750, from a spare when there is one.
func (t *tmpDirs) make(path string) error {
	if spare := t.spare.Take(); spare != "" {
		if err := os.Rename(spare, path); err == nil {
			return nil
		}
		os.RemoveAll(spare)
	}
	return os.MkdirAll(path, 0o750)
}

// release removes path, keeping it as a spare when it may be recycled.
func (t *tmpDirs) release(path string) {
	if path == "" {
		return
	}
	if t.recycle && emptyTmpDir(path) && t.spare.Keep(path) {
		return
	}
	os.RemoveAll(path)
}

// emptyTmpDir reports whether path is an empty directory of mode 0750.
func emptyTmpDir(path string) bool {
	st, err := os.Lstat(path)
	if err != nil || !st.IsDir() || st.Mode().Perm() != 0o750 {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(1)
	return len(names) == 0
}
