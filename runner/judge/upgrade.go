package judge

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Upgrade path. Runners before the judge's store rewrote the protected files inside
// the worker's workspace during a check and kept the worker's versions in a journal
// (<data>/work/meta/<task>/judge/journal) until the check ended. A runner of that
// version that died mid-check left the workspace as the judge's view: the held-out
// tests in it, where the task's next worker would read them, and the worker's own test
// files replaced by the base's, which the next candidate snapshot would take as the
// worker's. RecoverAll puts such workspaces back once, when a runner starts; nothing
// of this version writes a journal. It can go once no runner of the previous version
// is left to have died (a data dir with no judge/journal under its meta dir).

// journalFile is what <journal>/journal.json holds: the workspace the view was in,
// and each path the view rewrote, in the order it rewrote them. The worker's content
// of entries[i] is <journal>/saved/<i>.
type journalFile struct {
	Root    string         `json:"root"`
	Entries []journalEntry `json:"entries"`
}

// journalEntry is one path the view rewrote: what the worker had there, and the
// directories the rewrite made (outermost first), to remove again when empty.
type journalEntry struct {
	Rel  string      `json:"rel"`
	Kind kind        `json:"kind"`
	Mode os.FileMode `json:"mode,omitempty"`
	Made []string    `json:"made,omitempty"`
}

// RecoverAll puts back every workspace a runner of the previous version left as a
// judge's view under metaRoot (<data>/work/meta): the worker's versions of the files
// the view rewrote go back, the held-out tests it added go, and the journal is
// removed. A journal still locked by a live runner is left alone. Call it when a
// runner starts, before any worker runs; it returns the journals it closed.
func RecoverAll(metaRoot string) ([]string, error) {
	journals, err := filepath.Glob(filepath.Join(metaRoot, "*", "judge", "journal"))
	if err != nil {
		return nil, err
	}
	var done []string
	var errs []error
	for _, j := range journals {
		ok, err := recoverJournal(j)
		if err != nil {
			errs = append(errs, fmt.Errorf("judge: the journal %s: %w", j, err))
		} else if ok {
			done = append(done, j)
		}
	}
	return done, errors.Join(errs...)
}

// recoverJournal puts back the workspace journal names, saying whether it did.
func recoverJournal(journal string) (bool, error) {
	lock, err := lockDir(journal)
	if errors.Is(err, errViewLive) {
		return false, nil // its runner lives and will close it
	}
	if err != nil {
		return false, err
	}
	defer lock.Close()
	b, err := os.ReadFile(filepath.Join(journal, "journal.json"))
	if errors.Is(err, fs.ErrNotExist) {
		// The runner died before it wrote the journal, so before it rewrote anything.
		return true, os.RemoveAll(journal)
	}
	if err != nil {
		return false, err
	}
	var jf journalFile
	if err := json.Unmarshal(b, &jf); err != nil {
		return false, err
	}
	if !filepath.IsAbs(jf.Root) {
		return false, fmt.Errorf("names no workspace (%q)", jf.Root)
	}
	return true, putBack(jf.Root, journal, jf.Entries)
}

// putBack writes the worker's versions back into the workspace at root, last rewrite
// first, through the same link-refusing calls the view uses, and then removes the
// journal. A workspace that is gone has nothing to put back.
func putBack(root, journal string, entries []journalEntry) error {
	rootfd, err := openRoot(root)
	if errors.Is(err, fs.ErrNotExist) {
		return os.RemoveAll(journal)
	}
	if err != nil {
		return err
	}
	defer unix.Close(rootfd)
	var errs []error
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if !localPath(e.Rel) {
			errs = append(errs, fmt.Errorf("judge: the journal names %q, not a path below the workspace", e.Rel))
			continue
		}
		content, err := os.ReadFile(filepath.Join(journal, "saved", strconv.Itoa(i)))
		if err != nil && e.Kind != absent {
			errs = append(errs, fmt.Errorf("judge: the worker's %s: %w", e.Rel, err))
			continue
		}
		if err := write(rootfd, e.Rel, entry{kind: e.Kind, mode: e.Mode, content: content}); err != nil {
			errs = append(errs, fmt.Errorf("judge: putting back %s: %w", e.Rel, err))
			continue
		}
		for j := len(e.Made) - 1; j >= 0; j-- {
			removeEmptyDir(rootfd, e.Made[j])
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return os.RemoveAll(journal)
}

// removeEmptyDir removes rel under rootfd if it is an empty directory.
func removeEmptyDir(rootfd int, rel string) {
	if !localPath(rel) {
		return
	}
	dfd, err := openDir(rootfd, path.Dir(rel))
	if err != nil {
		return
	}
	defer unix.Close(dfd)
	_ = unix.Unlinkat(dfd, path.Base(rel), unix.AT_REMOVEDIR)
}
