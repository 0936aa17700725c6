package workspace

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/countersign/countersign/models"
)

// MergeRequest says what to land where.
type MergeRequest struct {
	// Repo is the checkout the task's worktree was taken of (absolute).
	Repo string
	// Target is the branch the work lands on ("main").
	Target string
	// Branch is the task's branch.
	Branch string
	// Verified is the full id of the commit CommitVerified returned. The merge is
	// refused unless Branch's tip has the same tree and holds it in its history.
	Verified string
	// FastForward moves Target to Branch's tip when Target has not moved since the
	// branch left it; otherwise, and always when false, a merge commit is made.
	FastForward bool
	// Committer makes the merge commit; DefaultCommitter when empty. It is also the
	// merge commit's author.
	Committer Identity
	// Subject is the merge commit's subject; "Merge branch '<Branch>' into <Target>"
	// when empty.
	Subject string
}

// MergeResult says what Merge did.
type MergeResult struct {
	// Commit is Target's tip afterwards.
	Commit string
	// Previous is Target's tip before.
	Previous string
	// FastForward is true when Target was moved to Branch's tip, false when a merge
	// commit was made (or nothing was done).
	FastForward bool
	// UpToDate is true when Target already held Branch's tip and nothing was done.
	UpToDate bool
	// CheckedOut is true when Target is the branch of the repository's main working
	// tree, whose files were updated with it.
	CheckedOut bool
}

// ConflictError is a merge that cannot be made without a person: Target is left where
// it was.
type ConflictError struct {
	Target string
	Branch string
	Files  []ConflictFile
}

// ConflictFile is one file in conflict.
type ConflictFile struct {
	Path string
	// Hunks are the conflicted regions of the file as git's merge wrote them (between
	// and including the <<<<<<< and >>>>>>> markers), bounded; empty for conflicts
	// without text (a file deleted on one side, a binary file).
	Hunks string
}

func (e *ConflictError) Error() string {
	names := make([]string, len(e.Files))
	for i, f := range e.Files {
		names[i] = f.Path
	}
	return fmt.Sprintf("merging %s into %s conflicts in %s", e.Branch, e.Target, strings.Join(names, ", "))
}

// Bounds on what a ConflictError carries.
const (
	maxConflictFiles = 50
	maxHunkFiles     = 10
	maxHunkBytes     = 4 << 10
)

// Merge lands the verified work of req.Branch on req.Target, only if it is what was
// verified. It refuses with *NotVerifiedError, moving nothing, when the branch's tip
// has a different tree from req.Verified (a change after verification), when the tip
// does not hold req.Verified in its history, or when an object the merge would bring
// into Target does not hash to its name (the object store is shared with workers,
// which could plant an object that makes a verified id mean other files). A conflict
// returns *ConflictError naming the files, Target unmoved.
//
// The resulting commit is computed without a working tree (git merge-tree
// --write-tree, git commit-tree), then Target is moved to it:
//
//   - Target checked out in no worktree: git update-ref from the tip it was read at,
//     so a Target that moved meanwhile is not overwritten. Confined, git reads the
//     checkout and writes only the object store, refs and reflogs.
//   - Target checked out in the repository's main working tree: its files must move
//     too, so `git merge --ff-only` to the computed commit runs there, only when no
//     tracked file has uncommitted changes (ECONFLICT otherwise) — and git itself
//     refuses to overwrite an untracked file. HEAD is checked to still be Target just
//     before; a person switching branches in that instant could still have the branch
//     they switched to fast-forwarded instead (never a non-fast-forward change).
//     Confined, git may write the whole checkout (its files, index, HEAD and refs):
//     that is what a checkout update writes.
//   - Target checked out in another worktree: refused with ECONFLICT; that
//     worktree's files would no longer match its branch.
//
// Names are validated before git runs (EINVALID).
func (m *Manager) Merge(ctx context.Context, req MergeRequest) (MergeResult, error) {
	committer, err := checkMergeRequest(req)
	if err != nil {
		return MergeResult{}, err
	}
	subject := req.Subject
	if subject == "" {
		subject = fmt.Sprintf("Merge branch '%s' into %s", req.Branch, req.Target)
	}
	msg, err := message(subject, "", nil)
	if err != nil {
		return MergeResult{}, err
	}
	r, err := m.openRepoGit(ctx, req.Repo)
	if err != nil {
		return MergeResult{}, err
	}
	old, tip, err := r.mergeHeads(req)
	if err != nil {
		return MergeResult{}, err
	}
	res := MergeResult{Previous: old, Commit: old}
	if err := r.checkVerified(req, tip); err != nil {
		return res, err
	}
	if ok, err := r.holds(tip, old); err != nil {
		return res, err
	} else if ok {
		res.UpToDate = true
		return res, nil
	}
	if err := m.verifyObjects(ctx, r.repo, tip, old); err != nil {
		var bad *corruptObjectError
		if errors.As(err, &bad) {
			return res, notVerified(req, tip, bad.Error())
		}
		return res, err
	}

	canFF, err := r.holds(old, tip)
	if err != nil {
		return res, err
	}
	next := tip
	if !(req.FastForward && canFF) {
		if next, err = r.mergeCommit(msg, committer, old, tip, req); err != nil {
			return res, err
		}
	}
	res.FastForward = next == tip

	// Objects are written; what follows moves Target. Worktrees are not added or
	// removed meanwhile (Prepare, Remove and Prune take the same lock), so where Target
	// is checked out holds until it has moved.
	m.gitMu.Lock()
	defer m.gitMu.Unlock()
	if res.CheckedOut, err = r.moveTarget(req, old, next); err != nil {
		return res, err
	}
	res.Commit = next
	return res, nil
}

// checkMergeRequest validates req's names (EINVALID) and returns the committer it
// asks for, DefaultCommitter when none.
func checkMergeRequest(req MergeRequest) (Identity, error) {
	var fe models.FieldErrors
	if err := ValidBranch(req.Target); err != nil {
		fe.Add("target", err.Error())
	}
	if err := ValidBranch(req.Branch); err != nil {
		fe.Add("branch", err.Error())
	}
	if !isCommitID(req.Verified) {
		fe.Add("verified", "must be a full commit id")
	}
	if req.Target == req.Branch && req.Target != "" {
		fe.Add("branch", "is the target")
	}
	committer := req.Committer
	if committer == (Identity{}) {
		committer = DefaultCommitter
	}
	if err := committer.check("committer"); err != nil {
		fe.Add("committer", err.Error())
	}
	return committer, fe.Err()
}

// notVerified is Merge's refusal of a branch whose tip is not what was verified.
func notVerified(req MergeRequest, tip, reason string) error {
	return &NotVerifiedError{Branch: req.Branch, Verified: req.Verified, Tip: tip, Reason: reason}
}

// mergeHeads resolves the tips of req's target and branch, ENOTFOUND when either
// is missing.
func (r *repoGit) mergeHeads(req MergeRequest) (old, tip string, err error) {
	old, found, err := r.m.resolveCommit(r.ctx, r.repo, r.reading, "refs/heads/"+req.Target)
	if err != nil {
		return "", "", err
	}
	if !found {
		return "", "", models.Errorf(models.ENOTFOUND, "target branch %s is not in %s", req.Target, r.repo)
	}
	tip, found, err = r.m.resolveCommit(r.ctx, r.repo, r.reading, "refs/heads/"+req.Branch)
	if err != nil {
		return "", "", err
	}
	if !found {
		return "", "", models.Errorf(models.ENOTFOUND, "branch %s is not in %s", req.Branch, r.repo)
	}
	return old, tip, nil
}

// checkVerified refuses (*NotVerifiedError) a branch tip that is not the verified
// commit's work: the verified commit missing, a different tree, or the verified
// commit no longer in the tip's history.
func (r *repoGit) checkVerified(req MergeRequest, tip string) error {
	if _, found, err := r.m.resolveCommit(r.ctx, r.repo, r.reading, req.Verified); err != nil {
		return err
	} else if !found {
		return notVerified(req, tip, "the verified commit is not in the repository")
	}
	tipTree, err := r.m.treeOf(r.ctx, r.repo, tip)
	if err != nil {
		return err
	}
	verifiedTree, err := r.m.treeOf(r.ctx, r.repo, req.Verified)
	if err != nil {
		return err
	}
	if tipTree != verifiedTree {
		return notVerified(req, tip, fmt.Sprintf("its files changed after verification (tip %s)", short(tip)))
	}
	if ok, err := r.holds(req.Verified, tip); err != nil {
		return err
	} else if !ok {
		return notVerified(req, tip, "the verified commit is no longer in its history")
	}
	return nil
}

// moveTarget moves req.Target from old to next where it is checked out (see Merge),
// reporting whether that was the main working tree. The caller holds gitMu.
func (r *repoGit) moveTarget(req MergeRequest, old, next string) (checkedOut bool, err error) {
	targetRef, repo := "refs/heads/"+req.Target, r.repo
	where, err := r.m.checkedOutAt(r.ctx, repo, targetRef)
	if err != nil {
		return false, err
	}
	switch {
	case where == "":
		if _, err := r.git(r.plumbing, nil, nil, "update-ref", "-m", "countersign: merge "+req.Branch, targetRef, next, old); err != nil {
			return false, fmt.Errorf("target %s moved during the merge, nothing landed: %w", req.Target, err)
		}
		return false, nil
	case where == repo:
		checkout := access{read: []string{repo}, write: []string{repo}}
		st, err := r.git(checkout, nil, nil, "status", "--porcelain", "-z", "--untracked-files=no")
		if err != nil {
			return false, err
		}
		if len(st) != 0 {
			return false, models.Errorf(models.ECONFLICT,
				"%s is checked out in %s with uncommitted changes: commit or stash them, then merge again (nothing landed)", req.Target, repo)
		}
		if head, err := r.git(r.reading, nil, nil, "symbolic-ref", "-q", "HEAD"); err != nil || strings.TrimSpace(string(head)) != targetRef {
			return false, models.Errorf(models.ECONFLICT, "%s switched branches during the merge; nothing landed", repo)
		}
		if _, err := r.git(checkout, nil, nil, "merge", "--ff-only", "--no-stat", "-q", next); err != nil {
			return false, models.Errorf(models.ECONFLICT, "%s could not be moved in its checkout %s, nothing landed: %v", req.Target, repo, err)
		}
		return true, nil
	default:
		return false, models.Errorf(models.ECONFLICT, "%s is checked out in the worktree %s; land it there by hand", req.Target, where)
	}
}

// checkedOutAt returns the worktree of repo that has ref checked out, "" when none.
func (m *Manager) checkedOutAt(ctx context.Context, repo, ref string) (string, error) {
	out, err := m.run(ctx, gitRun{dir: repo, read: []string{repo}, args: []string{"worktree", "list", "--porcelain", "-z"}})
	if err != nil {
		return "", err
	}
	var path string
	for _, field := range strings.Split(string(out), "\x00") {
		switch {
		case strings.HasPrefix(field, "worktree "):
			path = strings.TrimPrefix(field, "worktree ")
		case field == "branch "+ref:
			if real, err := filepath.EvalSymlinks(path); err == nil {
				path = real
			}
			return path, nil
		}
	}
	return "", nil
}

// conflict builds the ConflictError for merge-tree's output: the tree with the conflict
// markers, then the conflicted paths, NUL-separated.
func (m *Manager) conflict(ctx context.Context, repo string, req MergeRequest, out []byte) error {
	fields := strings.Split(string(out), "\x00")
	ce := &ConflictError{Target: req.Target, Branch: req.Branch}
	if len(fields) == 0 {
		return ce
	}
	tree := strings.TrimSpace(fields[0])
	seen := map[string]bool{}
	for _, p := range fields[1:] {
		if p == "" || seen[p] || len(ce.Files) == maxConflictFiles {
			continue
		}
		seen[p] = true
		ce.Files = append(ce.Files, ConflictFile{Path: p})
	}
	for i := range ce.Files {
		if i == maxHunkFiles || !isCommitID(tree) {
			break
		}
		blob, err := m.run(ctx, gitRun{dir: repo, read: []string{repo}, args: []string{"cat-file", "blob", tree + ":" + ce.Files[i].Path}})
		if err == nil {
			ce.Files[i].Hunks = hunks(blob, maxHunkBytes)
		}
	}
	return ce
}

// hunks extracts the conflict regions of a file git merged with markers, bounded.
func hunks(b []byte, max int) string {
	var out strings.Builder
	in := false
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if strings.HasPrefix(line, "<<<<<<< ") {
			in = true
		}
		if in {
			if out.Len()+len(line) > max {
				out.WriteString("[…]\n")
				return out.String()
			}
			out.WriteString(line)
		}
		if strings.HasPrefix(line, ">>>>>>> ") {
			in = false
		}
	}
	return out.String()
}
