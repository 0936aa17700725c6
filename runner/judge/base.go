package judge

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Base is the protected files of a task's workspace at its base revision: what the
// judge's view restores. It is taken once per task, before the first attempt's worker
// starts, and kept under the runner's data dir, out of every worker's reach.
type Base struct {
	// Revision names the base: the git commit the workspace was at, or "snapshot"
	// for a workspace that is not a git repository.
	Revision string `json:"revision"`
	// Files maps each protected path (slash-separated, relative to the workspace)
	// to its state at the base.
	Files map[string]baseFile `json:"files"`

	dir string // where the base's copies live
}

type baseFile struct {
	Kind   kind        `json:"kind"`
	Mode   os.FileMode `json:"mode,omitempty"`
	SHA256 string      `json:"sha256"`
	Stamp  stamp       `json:"stamp"`
}

const manifestName = "manifest.json"

// TakeBase records the protected files of the workspace at root under dir (made if
// needed): a copy of each, and a manifest. Every file matching a whole rule or a part
// rule is kept (a part rule needs the whole base file to restore its part). It
// replaces an earlier base in dir.
func TakeBase(dir, root, revision string, rules []Rule) (*Base, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "files"), 0o750); err != nil {
		return nil, err
	}
	b := &Base{Revision: revision, Files: map[string]baseFile{}, dir: dir}
	rootfd, err := openRoot(root)
	if err != nil {
		return nil, err
	}
	defer unix.Close(rootfd)
	err = walkProtected(root, rules, func(rel string, _ fs.DirEntry) error {
		e, err := read(rootfd, rel)
		if err != nil || e.kind == absent {
			return err
		}
		if err := b.save(rel, e); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("judge: taking the base: %w", err)
	}
	if err := b.forgetRacyStamps(); err != nil {
		return nil, err
	}
	m, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	// Written last: a base without its manifest is one that was not finished.
	return b, os.WriteFile(filepath.Join(dir, manifestName), m, 0o640)
}

// LoadBase reads the base recorded in dir; it returns (nil, nil) when there is none.
func LoadBase(dir string) (*Base, error) {
	m, err := os.ReadFile(filepath.Join(dir, manifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	b := &Base{dir: dir}
	if err := json.Unmarshal(m, b); err != nil {
		return nil, fmt.Errorf("judge: base manifest %s: %w", dir, err)
	}
	if b.Files == nil {
		b.Files = map[string]baseFile{}
	}
	return b, nil
}

// forgetRacyStamps drops the stamp of every base file changed so recently that a
// write after the snapshot could carry the same change time (the clock's tick is
// coarse): a file whose change time is not before a file written now is compared by
// its contents, like git's racily clean entries.
func (b *Base) forgetRacyStamps() error {
	mark := filepath.Join(b.dir, "stamp")
	if err := os.WriteFile(mark, nil, 0o640); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Stat(mark, &st); err != nil {
		return err
	}
	now := stampOf(&st).Ctime
	for rel, bf := range b.Files {
		if bf.Stamp.Ctime >= now {
			bf.Stamp = stamp{}
			b.Files[rel] = bf
		}
	}
	return nil
}

func (b *Base) save(rel string, e entry) error {
	bf := baseFile{Kind: e.kind, Mode: e.mode, SHA256: digest(e), Stamp: e.stamp}
	p := filepath.Join(b.dir, "files", filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return err
	}
	if err := os.WriteFile(p, e.content, 0o640); err != nil {
		return err
	}
	b.Files[rel] = bf
	return nil
}

// entry returns the base's state of rel (absent when the base had no such file).
func (b *Base) entry(rel string) (entry, error) {
	bf, ok := b.Files[rel]
	if !ok {
		return entry{}, nil
	}
	content, err := os.ReadFile(filepath.Join(b.dir, "files", filepath.FromSlash(rel)))
	if err != nil {
		return entry{}, fmt.Errorf("judge: the base's copy of %s: %w", rel, err)
	}
	return entry{kind: bf.Kind, mode: bf.Mode, content: content}, nil
}

// paths lists the base's protected paths, sorted.
func (b *Base) paths() []string {
	out := make([]string, 0, len(b.Files))
	for p := range b.Files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// digest identifies an entry's kind and bytes.
func digest(e entry) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d:%o:", e.kind, e.mode&0o111)
	h.Write(e.content)
	return hex.EncodeToString(h.Sum(nil))
}

// walkProtected calls fn with every path under root that a rule matches, in lexical
// order, without following links or entering skipDirs.
func walkProtected(root string, rules []Rule, fn func(rel string, d fs.DirEntry) error) error {
	if len(rules) == 0 {
		return nil
	}
	prefix := strings.TrimSuffix(root, string(filepath.Separator)) + string(filepath.Separator)
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil // vanished or unreadable below the root: not a file to judge
		}
		if d.IsDir() {
			if p != root && skipDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, prefix))
		for _, r := range rules {
			if r.Match(rel) {
				return fn(rel, d)
			}
		}
		return nil
	})
}

// unchanged reports, without reading it, that the file at rel, found by the walk as d,
// is the base's version: same kind, mode, inode, size and change time.
func (b *Base) unchanged(rel string, d fs.DirEntry) bool {
	bf, ok := b.Files[rel]
	if !ok || bf.Kind != regular || bf.Stamp.Ctime == 0 || d == nil || !d.Type().IsRegular() {
		return false
	}
	info, err := d.Info()
	if err != nil {
		return false
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || os.FileMode(st.Mode&0o777) != bf.Mode {
		return false
	}
	return stamp{Ino: st.Ino, Size: st.Size, Ctime: st.Ctim.Sec*1e9 + st.Ctim.Nsec} == bf.Stamp
}
