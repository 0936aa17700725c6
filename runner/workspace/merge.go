package workspace

import (
	"bytes"
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
	if err := fe.Err(); err != nil {
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
	repo, err := repoDir(req.Repo)
	if err != nil {
		return MergeResult{}, err
	}
	gitDir, err := repoGitDir(repo)
	if err != nil {
		return MergeResult{}, err
	}
	reading := access{read: []string{repo}}
	plumbing := access{read: []string{repo}, write: storeWrite(gitDir)}
	g := func(a access, stdin []byte, env []string, args ...string) ([]byte, error) {
		return m.run(ctx, gitRun{dir: repo, read: a.read, write: a.write, stdin: stdin, env: env, args: args})
	}
	targetRef, branchRef := "refs/heads/"+req.Target, "refs/heads/"+req.Branch

	old, found, err := m.resolveCommit(ctx, repo, reading, targetRef)
	if err != nil {
		return MergeResult{}, err
	}
	if !found {
		return MergeResult{}, models.Errorf(models.ENOTFOUND, "target branch %s is not in %s", req.Target, repo)
	}
	tip, found, err := m.resolveCommit(ctx, repo, reading, branchRef)
	if err != nil {
		return MergeResult{}, err
	}
	if !found {
		return MergeResult{}, models.Errorf(models.ENOTFOUND, "branch %s is not in %s", req.Branch, repo)
	}
	res := MergeResult{Previous: old, Commit: old}
	notVerified := func(reason string) error {
		return &NotVerifiedError{Branch: req.Branch, Verified: req.Verified, Tip: tip, Reason: reason}
	}
	if _, found, err := m.resolveCommit(ctx, repo, reading, req.Verified); err != nil {
		return res, err
	} else if !found {
		return res, notVerified("the verified commit is not in the repository")
	}
	tipTree, err := m.treeOf(ctx, repo, tip)
	if err != nil {
		return res, err
	}
	verifiedTree, err := m.treeOf(ctx, repo, req.Verified)
	if err != nil {
		return res, err
	}
	if tipTree != verifiedTree {
		return res, notVerified(fmt.Sprintf("its files changed after verification (tip %s)", short(tip)))
	}
	isAncestor := func(a, b string) (bool, error) {
		_, err := g(reading, nil, nil, "merge-base", "--is-ancestor", a, b)
		if err == nil {
			return true, nil
		}
		if exitCode(err) == 1 {
			return false, nil
		}
		return false, err
	}
	if ok, err := isAncestor(req.Verified, tip); err != nil {
		return res, err
	} else if !ok {
		return res, notVerified("the verified commit is no longer in its history")
	}
	if ok, err := isAncestor(tip, old); err != nil {
		return res, err
	} else if ok {
		res.UpToDate = true
		return res, nil
	}
	if err := m.verifyObjects(ctx, repo, tip, old); err != nil {
		var bad *corruptObjectError
		if errors.As(err, &bad) {
			return res, notVerified(bad.Error())
		}
		return res, err
	}

	canFF, err := isAncestor(old, tip)
	if err != nil {
		return res, err
	}
	next := tip
	if !(req.FastForward && canFF) {
		out, err := g(plumbing, nil, nil, "merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", old, tip)
		if exitCode(err) == 1 {
			return res, m.conflict(ctx, repo, req, out)
		}
		if err != nil {
			return res, err
		}
		tree, _, _ := bytes.Cut(out, []byte{0})
		env := append(committer.env("AUTHOR"), committer.env("COMMITTER")...)
		out, err = g(plumbing, []byte(msg), env, "-c", "commit.gpgSign=false", "commit-tree", "--no-gpg-sign",
			"-p", old, "-p", tip, "-F", "-", strings.TrimSpace(string(tree)))
		if err != nil {
			return res, err
		}
		if next = strings.TrimSpace(string(out)); !isCommitID(next) {
			return res, fmt.Errorf("git commit-tree printed %q, not a commit id", next)
		}
	}
	res.FastForward = next == tip

	// Objects are written; what follows moves Target. Worktrees are not added or
	// removed meanwhile (Prepare, Remove and Prune take the same lock), so where Target
	// is checked out holds until it has moved.
	m.gitMu.Lock()
	defer m.gitMu.Unlock()
	where, err := m.checkedOutAt(ctx, repo, targetRef)
	if err != nil {
		return res, err
	}
	switch {
	case where == "":
		if _, err := g(plumbing, nil, nil, "update-ref", "-m", "countersign: merge "+req.Branch, targetRef, next, old); err != nil {
			return res, fmt.Errorf("target %s moved during the merge, nothing landed: %w", req.Target, err)
		}
	case where == repo:
		checkout := access{read: []string{repo}, write: []string{repo}}
		st, err := g(checkout, nil, nil, "status", "--porcelain", "-z", "--untracked-files=no")
		if err != nil {
			return res, err
		}
		if len(st) != 0 {
			return res, models.Errorf(models.ECONFLICT,
				"%s is checked out in %s with uncommitted changes: commit or stash them, then merge again (nothing landed)", req.Target, repo)
		}
		if head, err := g(reading, nil, nil, "symbolic-ref", "-q", "HEAD"); err != nil || strings.TrimSpace(string(head)) != targetRef {
			return res, models.Errorf(models.ECONFLICT, "%s switched branches during the merge; nothing landed", repo)
		}
		if _, err := g(checkout, nil, nil, "merge", "--ff-only", "--no-stat", "-q", next); err != nil {
			return res, models.Errorf(models.ECONFLICT, "%s could not be moved in its checkout %s, nothing landed: %v", req.Target, repo, err)
		}
		res.CheckedOut = true
	default:
		return res, models.Errorf(models.ECONFLICT, "%s is checked out in the worktree %s; land it there by hand", req.Target, where)
	}
	res.Commit = next
	return res, nil
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

// Combine returns a commit of repo that holds every one of commits (full ids, the
// verified commits of steps that ran side by side): the one that already holds the
// others, or merge commits of those no other holds, in the order given, made by
// DefaultCommitter with subject, without a working tree. A conflict returns *ConflictError (Target names the commits merged so far,
// Branch the one that conflicts); nothing is written but unreferenced objects.
// Confined, git reads the checkout and writes only its object store.
func (m *Manager) Combine(ctx context.Context, repo string, commits []string, subject string) (string, error) {
	if len(commits) == 0 {
		return "", models.Errorf(models.EINVALID, "nothing to combine")
	}
	for _, c := range commits {
		if !isCommitID(c) {
			return "", models.Errorf(models.EINVALID, "%q is not a full commit id", c)
		}
	}
	msg, err := message(subject, "", nil)
	if err != nil {
		return "", err
	}
	repo, err = repoDir(repo)
	if err != nil {
		return "", err
	}
	gitDir, err := repoGitDir(repo)
	if err != nil {
		return "", err
	}
	reading := access{read: []string{repo}}
	plumbing := access{read: []string{repo}, write: storeWrite(gitDir)}
	g := func(a access, stdin []byte, env []string, args ...string) ([]byte, error) {
		return m.run(ctx, gitRun{dir: repo, read: a.read, write: a.write, stdin: stdin, env: env, args: args})
	}
	holds := func(a, b string) (bool, error) { // b's history holds a
		_, err := g(reading, nil, nil, "merge-base", "--is-ancestor", a, b)
		if exitCode(err) == 1 {
			return false, nil
		}
		return err == nil, err
	}
	// A commit another one holds adds nothing (a fix that merged the others already
	// holds them): only the rest are merged, so a conflict resolved once stays so.
	var heads []string
	for i, c := range commits {
		redundant := false
		for j, o := range commits {
			if i == j || redundant {
				continue
			}
			if c == o {
				redundant = j < i
				continue
			}
			if redundant, err = holds(c, o); err != nil {
				return "", err
			}
		}
		if !redundant {
			heads = append(heads, c)
		}
	}
	cur := heads[0]
	for _, next := range heads[1:] {
		if ok, err := holds(next, cur); err != nil {
			return "", err
		} else if ok {
			continue
		}
		if ok, err := holds(cur, next); err != nil {
			return "", err
		} else if ok {
			cur = next
			continue
		}
		out, err := g(plumbing, nil, nil, "merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", cur, next)
		if exitCode(err) == 1 {
			return "", m.conflict(ctx, repo, MergeRequest{Target: short(cur), Branch: short(next)}, out)
		}
		if err != nil {
			return "", err
		}
		tree, _, _ := bytes.Cut(out, []byte{0})
		env := append(DefaultCommitter.env("AUTHOR"), DefaultCommitter.env("COMMITTER")...)
		out, err = g(plumbing, []byte(msg), env, "-c", "commit.gpgSign=false", "commit-tree", "--no-gpg-sign",
			"-p", cur, "-p", next, "-F", "-", strings.TrimSpace(string(tree)))
		if err != nil {
			return "", err
		}
		if cur = strings.TrimSpace(string(out)); !isCommitID(cur) {
			return "", fmt.Errorf("git commit-tree printed %q, not a commit id", cur)
		}
	}
	return cur, nil
}
