package judge

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/countersign/countersign/models"
)

// PartFunc computes the judge's version of a file protected in part: the worker's
// content with the protected part (rule.Part) as it is in base, and the parts the
// worker changed. base or worker is nil when that side has no such file; names are
// the scripts or targets the contract runs. See runner/judge/fileparts.
type PartFunc func(file, part string, base, worker []byte, names []string) (judged []byte, changed []string, err error)

// Options says how to open a view.
type Options struct {
	// Restore puts the base's versions of changed protected files in place; without
	// it (tests_may_change) they are only reported.
	Restore bool
	// HeldOut are added to the view, and removed again by Close.
	HeldOut []models.HeldOutTest
	// Parts computes files protected in part; nil reports and restores them whole.
	Parts PartFunc
	// Names are the package.json scripts and Makefile targets the contract runs.
	Names []string
	// Journal is a directory (under the runner's data dir, out of the worker's reach)
	// that keeps the worker's versions until Close puts them back.
	Journal string
	// DiffLimit bounds each change's diff (2 KiB when zero).
	DiffLimit int
}

// View is a workspace turned into the judge's view. Close turns it back.
type View struct {
	root    string
	journal string
	entries []journalEntry
	closed  bool
	lock    *os.File // flock'd while the view is up: a live view is never recovered
}

// journalEntry is one path the view rewrote: what the worker had there (saved as
// journal/saved/<index>) and the directories the rewrite made.
type journalEntry struct {
	Rel  string      `json:"rel"`
	Kind kind        `json:"kind"`
	Mode os.FileMode `json:"mode,omitempty"`
	Made []string    `json:"made,omitempty"`
}

const journalName = "journal.json"

// Open compares the protected files of the workspace at root with base, and turns the
// workspace into the judge's view: the changed protected files as they were at base
// (when opt.Restore) and the held-out tests added. It returns every protected file the
// worker added, changed or deleted, sorted by path. Before it changes anything it
// saves the worker's versions under opt.Journal; an earlier view left open there (a
// runner that died) is closed first. Call Close when the verify commands are done,
// whatever they said.
func Open(root string, base *Base, rules []Rule, opt Options) (*View, []models.ProtectedChange, error) {
	if err := Recover(opt.Journal, root); err != nil {
		return nil, nil, err
	}
	rootfd, err := openRoot(root)
	if err != nil {
		return nil, nil, err
	}
	defer unix.Close(rootfd)
	changes, rewrites, err := compare(rootfd, root, base, rules, opt)
	if err != nil {
		return nil, nil, err
	}
	if !opt.Restore {
		rewrites = nil
	}
	for _, h := range opt.HeldOut {
		rewrites = append(rewrites, rewrite{rel: path.Clean(h.Path), judged: entry{kind: regular, mode: 0o644, content: []byte(h.Content)}})
	}
	v := &View{root: root, journal: opt.Journal}
	if len(rewrites) == 0 {
		v.closed = true
		return v, changes, nil
	}
	if err := v.apply(rootfd, rewrites); err != nil {
		cerr := v.Close()
		return nil, nil, errors.Join(err, cerr)
	}
	return v, changes, nil
}

// rewrite is one path the view sets to judged, with what the worker left there.
type rewrite struct {
	rel    string
	worker entry
	judged entry
	read   bool // worker was read already
}

// compare lists the protected files the worker changed and how the view would set
// each.
func compare(rootfd int, root string, base *Base, rules []Rule, opt Options) ([]models.ProtectedChange, []rewrite, error) {
	seen := map[string]bool{}
	var all []string
	err := walkProtected(root, rules, func(rel string, d fs.DirEntry) error {
		seen[rel] = true
		if !base.unchanged(rel, d) {
			all = append(all, rel)
		}
		return nil
	})
	for _, p := range base.paths() {
		if !seen[p] { // deleted, or behind a link the walk does not follow
			all = append(all, p)
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("judge: walking the workspace: %w", err)
	}
	sort.Strings(all)
	limit := opt.DiffLimit
	if limit <= 0 {
		limit = 2 << 10
	}
	var changes []models.ProtectedChange
	var rewrites []rewrite
	for _, rel := range all {
		if whole, parts := classify(rules, rel); !whole && len(parts) == 0 {
			continue // a base file no rule protects any more
		}
		was, err := base.entry(rel)
		if err != nil {
			return nil, nil, err
		}
		now, err := read(rootfd, rel)
		if err != nil {
			return nil, nil, err
		}
		c, judged := judgeProtected(rules, rel, was, now, opt.Parts, opt.Names, limit)
		if c == nil {
			continue
		}
		changes = append(changes, *c)
		rewrites = append(rewrites, rewrite{rel: rel, worker: now, judged: judged, read: true})
	}
	return changes, rewrites, nil
}

// judgeProtected decides what the judge's view shows at rel, a path whose base version
// was and worker version now may differ: nil when no rule protects rel or the
// protected file (or every protected part of it) is as it was; else the change to
// report and the judged entry (the base's version, or for a file protected in part the
// worker's with the protected parts as they were at base).
func judgeProtected(rules []Rule, rel string, was, now entry, parts PartFunc, names []string, limit int) (*models.ProtectedChange, entry) {
	whole, partRules := classify(rules, rel)
	if !whole && len(partRules) == 0 {
		return nil, entry{}
	}
	judged, changedParts := was, []string(nil)
	if !whole && parts != nil && was.kind != symlink && now.kind == regular {
		judged = now
		for _, r := range partRules {
			out, ch, err := parts(rel, r.Part, nilIfAbsent(was), judged.content, names)
			if err != nil {
				// A part that cannot be read (a base that is not JSON, a file over
				// the bound): the whole file is protected instead.
				judged, changedParts = was, []string{"the whole file (" + err.Error() + ")"}
				break
			}
			judged.content = out
			changedParts = append(changedParts, ch...)
		}
		if len(changedParts) == 0 || digest(judged) == digest(now) {
			return nil, entry{}
		}
	} else if digest(was) == digest(now) {
		return nil, entry{}
	}
	c := models.ProtectedChange{Path: rel, Change: models.ChangeChanged, Parts: changedParts}
	switch {
	case was.kind == absent && len(changedParts) == 0:
		c.Change = models.ChangeAdded
	case now.kind == absent:
		c.Change = models.ChangeDeleted
	}
	c.Diff = diff(judged, now, limit)
	return &c, judged
}

func nilIfAbsent(e entry) []byte {
	if e.kind == absent {
		return nil
	}
	if e.content == nil {
		return []byte{}
	}
	return e.content
}

// diff is a short line diff from the judged version to the worker's, or a line saying
// what changed when either is not text.
func diff(judged, worker entry, limit int) string {
	describe := func(e entry) string {
		switch e.kind {
		case absent:
			return ""
		case symlink:
			return "(a symbolic link to " + strconv.Quote(string(e.content)) + ")\n"
		}
		if !utf8.Valid(e.content) {
			return fmt.Sprintf("(%d bytes of binary data)\n", len(e.content))
		}
		return string(e.content)
	}
	d := models.TextDiff(describe(judged), describe(worker), limit)
	if d == "" && judged.mode != worker.mode {
		d = fmt.Sprintf("mode %o -> %o", judged.mode, worker.mode)
	}
	return d
}

// apply saves what the worker left at each path, records the journal, and only then
// rewrites the workspace.
func (v *View) apply(rootfd int, rewrites []rewrite) error {
	if err := os.RemoveAll(v.journal); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(v.journal, "saved"), 0o750); err != nil {
		return err
	}
	lock, err := lockJournal(v.journal, true)
	if err != nil {
		return err
	}
	v.lock = lock
	for i, rw := range rewrites {
		if !rw.read {
			e, err := read(rootfd, rw.rel)
			if err != nil {
				return err
			}
			rw.worker = e
		}
		if err := os.WriteFile(filepath.Join(v.journal, "saved", strconv.Itoa(i)), rw.worker.content, 0o640); err != nil {
			return err
		}
		v.entries = append(v.entries, journalEntry{Rel: rw.rel, Kind: rw.worker.kind, Mode: rw.worker.mode})
	}
	if err := v.saveJournal(); err != nil {
		return err
	}
	for i, rw := range rewrites {
		made, err := write(rootfd, rw.rel, rw.judged)
		v.entries[i].Made = made
		if err != nil {
			_ = v.saveJournal()
			return fmt.Errorf("judge: preparing %s: %w", rw.rel, err)
		}
	}
	return v.saveJournal()
}

// journalFile is what journal.json holds: the workspace and what the view rewrote.
type journalFile struct {
	Root    string         `json:"root"`
	Entries []journalEntry `json:"entries"`
}

func (v *View) saveJournal() error {
	b, err := json.Marshal(journalFile{Root: v.root, Entries: v.entries})
	if err != nil {
		return err
	}
	tmp := filepath.Join(v.journal, journalName+".tmp")
	if err := os.WriteFile(tmp, b, 0o640); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(v.journal, journalName))
}

// Close puts back what the worker left at every path the view rewrote, removes the
// directories the view made (when empty), and forgets the journal. It is idempotent.
func (v *View) Close() error {
	if v == nil || v.closed {
		return nil
	}
	if err := putBack(v.root, v.journal, v.entries); err != nil {
		return err
	}
	v.closed = true
	if v.lock != nil {
		v.lock.Close()
	}
	return nil
}

// lockJournal takes the journal's lock: waiting for it when wait, else failing at once
// with errViewLive while another process (a live runner) holds it.
func lockJournal(journal string, wait bool) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(journal, "lock"), os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o640)
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errViewLive
		}
		return nil, err
	}
	return f, nil
}

// errViewLive: the view is up in a live runner.
var errViewLive = errors.New("judge: the view is up in a live runner")

// Recover closes a view a runner left open in journal (it died between Open and
// Close): the worker's versions go back into the workspace at root (the one the
// journal names when root is ""). No journal, no-op.
func Recover(journal, root string) error {
	_, err := recoverJournal(journal, root)
	return err
}

// recoverJournal is Recover, saying whether it put anything back.
func recoverJournal(journal, root string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(journal, journalName))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var jf journalFile
	if err := json.Unmarshal(b, &jf); err != nil {
		return false, fmt.Errorf("judge: journal %s: %w", journal, err)
	}
	if root == "" {
		root = jf.Root
	}
	lock, err := lockJournal(journal, false)
	if errors.Is(err, errViewLive) {
		return false, nil // its runner lives and will close it
	}
	if err != nil {
		return false, err
	}
	defer lock.Close()
	return true, putBack(root, journal, jf.Entries)
}

// RecoverAll closes every view left open under metaRoot (<data>/work/meta), each in
// the workspace its journal names: what a runner that died mid-check left behind,
// restored test files and held-out tests included, must not wait for the task's next
// attempt, which may never come. It returns the journals it closed.
func RecoverAll(metaRoot string) ([]string, error) {
	journals, err := filepath.Glob(filepath.Join(metaRoot, "*", "judge", "journal"))
	if err != nil {
		return nil, err
	}
	var done []string
	var errs []error
	for _, j := range journals {
		ok, err := recoverJournal(j, "")
		if err != nil {
			errs = append(errs, err)
		} else if ok {
			done = append(done, j)
		}
	}
	return done, errors.Join(errs...)
}

func putBack(root, journal string, entries []journalEntry) error {
	rootfd, err := openRoot(root)
	if err != nil {
		return err
	}
	defer unix.Close(rootfd)
	var errs []error
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		content, err := os.ReadFile(filepath.Join(journal, "saved", strconv.Itoa(i)))
		if err != nil && e.Kind != absent {
			errs = append(errs, fmt.Errorf("judge: the worker's %s: %w", e.Rel, err))
			continue
		}
		if _, err := write(rootfd, e.Rel, entry{kind: e.Kind, mode: e.Mode, content: content}); err != nil {
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
