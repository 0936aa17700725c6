package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// tmpDirs hands attempts their private temp dirs, recycling the empty ones. On an
// ext4 without a journal every new inode is found by skipping those deleted in the
// last minute, so a runner that makes and removes a directory per attempt makes every
// later file creation on the host slower the busier it is; renaming a spare directory
// into place creates nothing and deletes nothing.
//
// A directory is recycled only when nothing of the attempt that used it can still
// write to it: its processes are dead (the sandbox kills escapees, or nothing confined
// them in the first place, so there was no boundary to keep), and it is empty.
type tmpDirs struct {
	dir     string // where attempts' temp dirs and the spares are
	recycle bool

	mu    sync.Mutex
	spare []string
	n     int // names spares uniquely
}

// maxSpareTmpDirs bounds the spare directories kept.
const maxSpareTmpDirs = 64

// spareTmpPrefix starts the names of spare directories.
const spareTmpPrefix = ".spare-"

func newTmpDirs(dir string, recycle bool) *tmpDirs {
	return &tmpDirs{dir: dir, recycle: recycle}
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
	t.mu.Lock()
	var spare string
	if n := len(t.spare); n > 0 {
		spare, t.spare = t.spare[n-1], t.spare[:n-1]
	}
	t.mu.Unlock()
	if spare != "" {
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
	if t.recycle && t.keep(path) {
		return
	}
	os.RemoveAll(path)
}

// keep moves path, when it is an empty directory of mode 0750, among the spares.
func (t *tmpDirs) keep(path string) bool {
	st, err := os.Lstat(path)
	if err != nil || !st.IsDir() || st.Mode().Perm() != 0o750 {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	names, _ := f.Readdirnames(1)
	f.Close()
	if len(names) > 0 {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.spare) >= maxSpareTmpDirs {
		return false
	}
	t.n++
	spare := filepath.Join(t.dir, fmt.Sprintf("%s%d", spareTmpPrefix, t.n))
	if os.Rename(path, spare) != nil {
		return false
	}
	t.spare = append(t.spare, spare)
	return true
}
