package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/workspace"
)

// A task without a git workspace (a fresh directory, or the agent's own workdir used
// in place) has no commit to name what it produced. Its deliverable is kept instead:
// the regular files the task added or changed, compared with a stamp base taken before
// its first worker ran, copied once an attempt is verified to
//
//	<root>/meta/<task>/deliverable-base.json      the stamps before the first attempt (none for a workspace that started empty)
//	<root>/meta/<task>/deliverable/<n>/<path>     the kept copies of verified attempt n
//	<root>/meta/<task>/deliverable/<n>.json       their manifest (also on the attempt; none when nothing was kept)
//
// The meta directory is the runner's: workers may read it, never write it, so the
// copies stay as they were verified whatever happens to the workspace afterwards.
// The base is the task's, not the attempt's, like the judge's: a revision that fixes
// one file delivers what the earlier attempts wrote too, since the checks passed on
// all of it; and it survives a runner restart.

// Bounds of a deliverable. A worker decides what its workspace holds; none of it may
// make the runner walk, copy or keep without limit.
const (
	deliverableMaxFiles   = 500
	deliverableMaxBytes   = 50 << 20
	deliverableMaxEntries = 20_000 // entries walked in the workspace, each time
)

// deliverableRun is the deliverable's part of one attempt: the task's base, and what
// was kept once the attempt was verified.
type deliverableRun struct {
	base *stampBase
	kept *models.Deliverable // nil until kept, and when keeping failed
}

// fileStamp identifies a version of a regular file without reading it: a file with
// the same inode, size, modification and change time (which no process can set) has
// not been written since.
type fileStamp struct {
	Ino   uint64 `json:"i"`
	Size  int64  `json:"s"`
	Mtime int64  `json:"m"` // ns
	Ctime int64  `json:"c"` // ns
}

// stampBase is the workspace's regular files before a task's first worker ran.
// Truncated says the walk stopped at deliverableMaxEntries: files it did not reach
// would look new, so no deliverable is kept against it.
type stampBase struct {
	Truncated bool                 `json:"truncated,omitempty"`
	Files     map[string]fileStamp `json:"files"`
}

// deliverableDir is where a task's base, kept copies and manifests are: under the
// task's meta dir, which workers may read but not write.
func deliverableDir(metaDir string) string { return filepath.Join(metaDir, "deliverable") }

// hasGit says the workspace is a git worktree: its verified work is a commit, not a
// deliverable.
func hasGit(ws *workspace.Workspace) bool { return ws.Branch() != "" || ws.Repo() != "" }

// prepareDeliverable loads the task's stamp base, or takes it when the task has none
// (its first attempt; or a task begun under an older version, from what its earlier
// attempts left). Call it before the worker runs. A base that cannot be taken costs
// the attempt nothing: it is logged, and the attempt keeps no deliverable.
func (p *attemptRunner) prepareDeliverable(tr *taskRun, ar *attemptRun) {
	if ar.ws == nil || hasGit(ar.ws) {
		return
	}
	base, err := loadOrTakeBase(ar.ws, ar.num)
	if err != nil {
		p.log.Warn("taking the workspace's stamps for the deliverable failed; the attempt keeps none",
			"task_id", tr.task.ID, "attempt", ar.num, "err", err)
		return
	}
	ar.deliv = &deliverableRun{base: base}
}

// deliverableBase is where a task's stamp base is kept: beside the deliverable
// directory, which a task that delivers nothing never needs.
func deliverableBase(metaDir string) string { return filepath.Join(metaDir, "deliverable-base.json") }

// olderDeliverableBase is where runners before deliverableBase kept it.
func olderDeliverableBase(metaDir string) string {
	return filepath.Join(deliverableDir(metaDir), "base.json")
}

// loadOrTakeBase returns the task's stamp base: the one kept in its meta dir, the empty
// one for a workspace that started empty (see Workspace.StartedEmpty: nothing is
// written, a file per task the runner can do without), or the stamps taken now and
// kept for the task's later attempts.
func loadOrTakeBase(ws *workspace.Workspace, attempt int) (*stampBase, error) {
	path := deliverableBase(ws.MetaDir)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		b, err = os.ReadFile(olderDeliverableBase(ws.MetaDir))
	}
	if err == nil {
		var base stampBase
		if err := json.Unmarshal(b, &base); err != nil {
			return nil, fmt.Errorf("reading the stamp base: %w", err)
		}
		return &base, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if ws.StartedEmpty(attempt) {
		return &stampBase{Files: map[string]fileStamp{}}, nil
	}
	files, truncated, err := walkStamps(ws.Dir)
	if err != nil {
		return nil, err
	}
	base := &stampBase{Truncated: truncated, Files: files}
	if b, err = json.Marshal(base); err != nil {
		return nil, err
	}
	return base, writeAtomic(path, b)
}

// writeAtomic writes b to path through a temporary file and a rename, so that a
// runner that dies half-way leaves no half a base.
func writeAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o640); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// walkStamps stamps every regular file below dir by relative path, with Lstat: no
// symbolic link is followed, and .git directories (git's, not the task's work) and the
// old in-workspace meta directory are skipped. It stops after deliverableMaxEntries
// entries with truncated set. Entries that vanish or cannot be read while it walks are
// left out: only the root's failure is an error.
func walkStamps(dir string) (files map[string]fileStamp, truncated bool, err error) {
	files = map[string]fileStamp{}
	n := 0
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				return err
			}
			return nil
		}
		if path == dir {
			return nil
		}
		if n++; n > deliverableMaxEntries {
			truncated = true
			return filepath.SkipAll
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == workspace.MetaDirName {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // symbolic links, FIFOs, sockets, devices are never deliverables
		}
		fi, err := d.Info() // Lstat
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return nil
		}
		files[rel] = stampOf(fi)
		return nil
	})
	return files, truncated, err
}

func stampOf(fi os.FileInfo) fileStamp {
	s := fileStamp{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*unix.Stat_t); ok {
		s.Ino, s.Ctime = st.Ino, st.Ctim.Sec*1e9+st.Ctim.Nsec
	}
	return s
}

// keepDeliverable keeps what a verified attempt of a task without a git workspace
// added or changed since the task's base (see the top of this file), for saveAttempt
// to record on the attempt. Keeping it is not a check: whatever goes wrong is logged
// and the attempt keeps no deliverable, and its verdict stands.
func (p *attemptRunner) keepDeliverable(ctx context.Context, tr *taskRun, ar *attemptRun) {
	if ar.deliv == nil || ar.outcome != models.OutcomePassed || hasGit(ar.ws) {
		return
	}
	if ar.deliv.base.Truncated {
		p.log.Warn("the workspace had too many entries when the task began; no deliverable is kept",
			"task_id", tr.task.ID, "attempt", ar.num, "bound", deliverableMaxEntries)
		return
	}
	d, err := keepChanged(ctx, ar.ws, ar.deliv.base, ar.num)
	if err != nil {
		p.log.Warn("keeping the deliverable failed; the attempt keeps none", "task_id", tr.task.ID, "attempt", ar.num, "err", err)
		return
	}
	ar.deliv.kept = d
}

// deliverable is what saveAttempt records on the attempt: the kept deliverable of a
// passed attempt, nil otherwise (an attempt whose pass was not applied keeps none).
func (ar *attemptRun) deliverable() *models.Deliverable {
	if ar.deliv == nil || ar.outcome != models.OutcomePassed {
		return nil
	}
	return ar.deliv.kept
}

// keepChanged copies the regular files of ws that are not in base, or whose stamp
// changed, to the attempt's deliverable directory, within the bounds, and writes
// their manifest there. A copy of the same attempt left by a runner that died is
// replaced.
func keepChanged(ctx context.Context, ws *workspace.Workspace, base *stampBase, attempt int) (*models.Deliverable, error) {
	now, truncated, err := walkStamps(ws.Dir)
	if err != nil {
		return nil, err
	}
	var changed []string
	for rel, st := range now {
		if old, ok := base.Files[rel]; !ok || old != st {
			changed = append(changed, rel)
		}
	}
	slices.Sort(changed)
	dst := filepath.Join(deliverableDir(ws.MetaDir), strconv.Itoa(attempt))
	if err := os.RemoveAll(dst); err != nil {
		return nil, err
	}
	d := &models.Deliverable{Files: []models.DeliverableFile{}, Truncated: truncated}
	if len(changed) == 0 {
		// Nothing to keep, nothing to write (the attempt's row says so): only a
		// manifest a runner that died may have left goes.
		if err := os.Remove(dst + ".json"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return d, nil
	}
	budget := int64(deliverableMaxBytes)
	for i, rel := range changed {
		if err := ctx.Err(); err != nil {
			os.RemoveAll(dst)
			return nil, err
		}
		if len(d.Files) == deliverableMaxFiles {
			d.Omitted += len(changed) - i
			break
		}
		f, ok, err := keepFile(ws.Dir, rel, dst, budget)
		if err != nil {
			os.RemoveAll(dst)
			return nil, err
		}
		if !ok {
			d.Omitted++
			continue
		}
		budget -= f.Size
		d.Files = append(d.Files, f)
	}
	d.Truncated = d.Truncated || d.Omitted > 0
	b, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	if err := writeAtomic(dst+".json", b); err != nil {
		os.RemoveAll(dst)
		return nil, err
	}
	return d, nil
}

// keepFile copies the regular file rel of dir below dst, hashing the bytes it copies
// (not what a stat said: the file may change while it is read). ok is false when the
// file is not kept: its name is not a clean path a client can name, it is no longer a
// regular file (a worker's process swapped in a link, a FIFO, a device), it vanished,
// or it does not fit in budget. err is the runner's own failure (writing the copy).
func keepFile(dir, rel, dst string, budget int64) (f models.DeliverableFile, ok bool, err error) {
	name := filepath.ToSlash(rel)
	if !validDeliverablePath(name) {
		return f, false, nil
	}
	in, err := workspace.OpenRegularBeneath(dir, rel)
	if err != nil {
		return f, false, nil
	}
	defer in.Close()
	if st, err := in.Stat(); err != nil || st.Size() > budget {
		return f, false, nil
	}
	out := filepath.Join(dst, rel)
	if err := os.MkdirAll(filepath.Dir(out), 0o750); err != nil {
		return f, false, err
	}
	w, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return f, false, err
	}
	h := sha256.New()
	n, cerr := io.Copy(io.MultiWriter(w, h), io.LimitReader(in, budget+1))
	if err := w.Close(); cerr == nil {
		cerr = err
	}
	if cerr != nil || n > budget {
		// Grown past the budget while read, or unreadable: not kept. A failed write
		// of the copy is the runner's.
		os.Remove(out)
		var pe *os.PathError
		if cerr != nil && errors.As(cerr, &pe) && pe.Path == out {
			return f, false, cerr
		}
		return f, false, nil
	}
	return models.DeliverableFile{Path: name, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, true, nil
}

// validDeliverablePath says p may name a kept file: valid UTF-8 (a manifest is JSON,
// which would change any other name), no NUL, relative, slash-separated, not climbing
// out with "..", already clean.
func validDeliverablePath(p string) bool {
	if p == "" || !utf8.ValidString(p) || strings.ContainsRune(p, 0) || strings.HasPrefix(p, "/") {
		return false
	}
	native := filepath.FromSlash(p)
	return filepath.IsLocal(native) && filepath.Clean(native) == native
}

// DeliverableFiles reads the kept files of deliverables (models.DeliverableStore)
// under a workspace root, the runner's <data>/work; a server without a runner of its
// own reads them the same way.
type DeliverableFiles struct{ root string }

// NewDeliverableFiles returns the reader of the deliverables kept under root (the
// workspace manager's root, <data>/work).
func NewDeliverableFiles(root string) *DeliverableFiles { return &DeliverableFiles{root: root} }

// Open returns the kept copy of path of attempt of task taskID. path must be a clean
// relative path (a manifest's); anything else, and a file that is not kept, is
// ENOTFOUND. Nothing is followed: no link, no step out of the attempt's directory.
// Errors never name the data dir.
func (d *DeliverableFiles) Open(ctx context.Context, taskID int64, attempt int, path string) (io.ReadCloser, error) {
	missing := models.Errorf(models.ENOTFOUND, "file %q is not kept in the deliverable of task %d", path, taskID)
	if taskID <= 0 || attempt <= 0 || !validDeliverablePath(path) {
		return nil, missing
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir := filepath.Join(d.root, "meta", strconv.FormatInt(taskID, 10), "deliverable", strconv.Itoa(attempt))
	f, err := workspace.OpenRegularBeneath(dir, filepath.FromSlash(path))
	switch {
	case err == nil:
		return f, nil
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR), errors.Is(err, workspace.ErrNotRegular):
		return nil, missing
	}
	var errno unix.Errno
	if errors.As(err, &errno) {
		return nil, fmt.Errorf("opening a kept file of task %d: %w", taskID, errno)
	}
	return nil, fmt.Errorf("opening a kept file of task %d failed", taskID)
}
