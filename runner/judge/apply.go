package judge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/countersign/countersign/models"
)

// Git's modes for the entries a view materialises.
const (
	modeExec    = 0o100755
	modeLink    = 0o120000
	modeGitlink = 0o160000
)

// viewPlan is what OpenView does to the Env's copy of the base: remove the deletions,
// then write the writes in order (the candidate's entries, judged versions of files
// protected in part, the extra files).
type viewPlan struct {
	deletes []string
	writes  []placement
	// kept are the protected paths whose base version the view keeps from the Env
	// while the candidate changed them; nothing the plan applies may take them away.
	kept []string
}

type placement struct {
	rel string
	e   entry
}

// plan decides, from the changes base→candidate, what the view applies and which
// protected changes it reports.
func plan(ctx context.Context, req *ViewRequest) (*viewPlan, []models.ProtectedChange, error) {
	changes, err := req.Trees.Changes(ctx, req.Base, req.Candidate)
	if err != nil {
		return nil, nil, fmt.Errorf("judge: listing the candidate's changes: %w", err)
	}
	limit := req.DiffLimit
	if limit <= 0 {
		limit = 2 << 10
	}
	p := &viewPlan{}
	var protected []models.ProtectedChange
	apply := func(rel string, e entry) {
		if e.kind == absent {
			p.deletes = append(p.deletes, rel)
		} else {
			p.writes = append(p.writes, placement{rel: rel, e: e})
		}
	}
	for _, ch := range changes {
		if !localPath(ch.Path) {
			return nil, nil, &BlockedError{Path: ch.Path, Reason: "the path is not below the workspace"}
		}
		if ch.OldMode == modeGitlink || ch.NewMode == modeGitlink {
			continue // a submodule's checkout is the Env's: a tree does not hold it
		}
		whole, parts := classify(req.Rules, ch.Path)
		if !whole && len(parts) == 0 {
			now, err := side(ctx, req.Trees, ch.NewMode, ch.NewBlob)
			if err != nil {
				return nil, nil, err
			}
			apply(ch.Path, now)
			continue
		}
		was, err := side(ctx, req.Trees, ch.OldMode, ch.OldBlob)
		if err != nil {
			return nil, nil, err
		}
		now, err := side(ctx, req.Trees, ch.NewMode, ch.NewBlob)
		if err != nil {
			return nil, nil, err
		}
		c, judged := judgeLarge(ch.Path, was, now)
		if c == nil {
			c, judged = judgeProtected(req.Rules, ch.Path, was, now, req.Parts, req.Names, limit)
		}
		if c == nil {
			apply(ch.Path, now) // protected in part, and no protected part changed
			continue
		}
		protected = append(protected, *c)
		if !req.Restore || defencesOff.restore {
			apply(ch.Path, now) // tests_may_change: reported, not undone
			continue
		}
		if judged.kind != absent {
			p.kept = append(p.kept, ch.Path)
		}
		if digest(judged) != digest(was) {
			apply(ch.Path, judged) // a file protected in part: the worker's, its parts the base's
		}
	}
	for _, f := range req.Extra {
		rel := path.Clean(f.Rel)
		if !localPath(rel) {
			return nil, nil, models.Errorf(models.EINVALID, "judge: the extra file %q is not below the view", f.Rel)
		}
		mode := f.Mode.Perm()
		if mode == 0 {
			mode = 0o644
		}
		p.writes = append(p.writes, placement{rel: rel, e: entry{kind: regular, mode: mode, content: f.Content}})
	}
	return p, protected, p.check()
}

// side is one side of a change as an entry: absent, a file with git's mode, or a link.
func side(ctx context.Context, trees Trees, mode uint32, blob string) (entry, error) {
	if mode == 0 || blob == "" {
		return entry{}, nil
	}
	b, err := trees.Blob(ctx, blob)
	if err != nil {
		return entry{}, fmt.Errorf("judge: reading blob %s: %w", blob, err)
	}
	switch {
	case mode == modeLink:
		return entry{kind: symlink, content: b}, nil
	case mode == modeExec:
		return entry{kind: regular, mode: 0o755, content: b}, nil
	}
	return entry{kind: regular, mode: 0o644, content: b}, nil
}

// judgeLarge protects whole a protected file over the bound the judge reads for a
// diff or a part: the base's version stays, the change is reported by size.
func judgeLarge(rel string, was, now entry) (*models.ProtectedChange, entry) {
	if len(was.content) <= maxFileBytes && len(now.content) <= maxFileBytes {
		return nil, entry{}
	}
	c := models.ProtectedChange{Path: rel, Change: models.ChangeChanged,
		Diff: fmt.Sprintf("(a protected file of %d bytes, now %d bytes)", len(was.content), len(now.content))}
	switch {
	case was.kind == absent:
		c.Change = models.ChangeAdded
	case now.kind == absent:
		c.Change = models.ChangeDeleted
	}
	return &c, was
}

// check refuses a plan that would take a kept protected path away: a file or link the
// candidate puts where a directory holding it was.
func (p *viewPlan) check() error {
	if defencesOff.conflicts {
		return nil
	}
	nonDir := map[string]bool{}
	for _, w := range p.writes {
		nonDir[w.rel] = true
	}
	for _, k := range p.kept {
		for d := path.Dir(k); d != "."; d = path.Dir(d) {
			if nonDir[d] {
				return &BlockedError{Path: d}
			}
		}
	}
	return nil
}

// apply carries the plan out under root, the view's root, never following a link nor
// leaving root.
func (p *viewPlan) apply(root string) error {
	rootfd, err := openRoot(root)
	if err != nil {
		return err
	}
	defer unix.Close(rootfd)
	for _, rel := range p.deletes {
		if err := remove(rootfd, rel); err != nil {
			return err
		}
	}
	for _, w := range p.writes {
		if err := place(rootfd, root, w.rel, w.e); err != nil {
			return err
		}
	}
	return nil
}

// remove deletes rel under rootfd, whatever it is, and then the directories above it
// that this left empty (as a checkout does). A path below a link or a file is not in
// the view: nothing to do.
func remove(rootfd int, rel string) error {
	dfd, err := openDir(rootfd, path.Dir(rel))
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
			return nil
		}
		return &os.PathError{Op: "open", Path: path.Dir(rel), Err: err}
	}
	err = removeAt(dfd, path.Base(rel))
	unix.Close(dfd)
	if err != nil {
		return &os.PathError{Op: "remove", Path: rel, Err: err}
	}
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		pfd, err := openDir(rootfd, path.Dir(d))
		if err != nil {
			return nil
		}
		err = unix.Unlinkat(pfd, path.Base(d), unix.AT_REMOVEDIR)
		unix.Close(pfd)
		if err != nil {
			return nil // not empty: the rest of the directory stays
		}
	}
	return nil
}

// removeAt removes name from the directory dfd: a file or link, or a directory with
// everything below it, following no link. Absent is fine.
func removeAt(dfd int, name string) error {
	err := unix.Unlinkat(dfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	sub, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	names, err := readNames(sub)
	for _, n := range names {
		if err == nil {
			err = removeAt(sub, n)
		}
	}
	unix.Close(sub)
	if err != nil {
		return err
	}
	return unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR)
}

// place puts e at rel under rootfd, replacing whatever is there (a directory with all
// below it included), making missing directories. A link or a file where a directory
// on the way should be is a *BlockedError: nothing is written through it.
func place(rootfd int, root, rel string, e entry) error {
	if defencesOff.links {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.RemoveAll(p); err != nil {
			return err
		}
		if e.kind == symlink {
			return os.Symlink(string(e.content), p)
		}
		return os.WriteFile(p, e.content, 0o644)
	}
	dfd, err := makeDirs(rootfd, path.Dir(rel))
	if err != nil {
		return err
	}
	err = removeAt(dfd, path.Base(rel))
	unix.Close(dfd)
	if err != nil {
		return &os.PathError{Op: "remove", Path: rel, Err: err}
	}
	if err := write(rootfd, rel, e); err != nil {
		return fmt.Errorf("judge: writing %s into the view: %w", rel, err)
	}
	return nil
}

// defencesOff switches defences off, for the tests that show each one matters. Never
// set outside tests.
var defencesOff struct {
	shareEnv  bool // the view is the Env itself, bind-mounted: the checks write into it
	restore   bool // protected changes are applied even with Restore
	links     bool // writes follow links (no openat2 beneath the view)
	conflicts bool // a candidate's file or link may replace a directory of kept protected files
}
