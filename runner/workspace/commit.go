package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/countersign/countersign/models"
)

// CommitInfo says what the verified commit records.
type CommitInfo struct {
	// Author is the agent whose work it is; required.
	Author Identity
	// Committer is who commits it; DefaultCommitter when empty.
	Committer Identity
	// Subject is the task's title: made one line (control characters and newlines
	// become spaces) and cut to 100 characters. Required.
	Subject string
	// Body is optional free text after the subject (bounded to 16 KiB).
	Body string
	// Trailers end the message, in this order: TrailerTask, TrailerAttempt and
	// TrailerVerifiedBy at least, by the runner's convention. Keys are letters, digits
	// and '-'; values are made one line.
	Trailers []Trailer
	// Tree is the full id of the tree to commit: the judged candidate's (see
	// judge.Snapshot), exported into the repository beforehand. Required.
	Tree string
}

// repoGitDir returns repo's git directory, <repo>/.git, which must be a directory of
// its own (not a symbolic link, not a "gitdir:" file): the runner's grants name its
// parts (objects, refs, logs), and GitPaths gives workers the same ones.
func repoGitDir(repo string) (string, error) {
	gd := filepath.Join(repo, ".git")
	fi, err := os.Lstat(gd)
	if err != nil || !fi.IsDir() {
		return "", &models.Error{Code: models.EINVALID, Message: fmt.Sprintf("%s is not the top of a git checkout with a .git directory", repo),
			Fields: map[string]string{"repo": "needs a .git directory"}}
	}
	return gd, nil
}

// storeWrite is the part of a repository's git directory a command that adds objects
// and moves refs needs to write: the object store, the refs and their reflogs. Not the
// configuration, the hooks, the index or HEAD.
func storeWrite(gitDir string) []string {
	return []string{filepath.Join(gitDir, "objects"), filepath.Join(gitDir, "refs"), filepath.Join(gitDir, "logs")}
}

// CommitVerified commits the tree c.Tree — the candidate the judge snapshot and
// judged, never the worktree as it is on disk — onto ws's branch, and returns the new
// commit's id. The tree's objects must already be in the repository (the judge's
// Store.Export puts them there); nothing is read from the worktree, so nothing that
// ran after the candidate was fixed (a check, a process the worker left behind) can
// change what lands. The parent is the branch's tip (the worker's own commits on the
// branch stay in the history), the author is c.Author and the message ends with
// c.Trailers.
//
// When the tree is exactly the tip's — the worker committed everything itself — a
// commit with the same tree (an empty commit) still records the verification, unless
// the tip is already a commit with this very tree, message, author and committer (a
// retry after the runner died between committing and recording the id), which is
// returned as it is. The branch moves only from the tip it was read at (update-ref
// with the old value). The worktree's own index is then replaced by one read from the
// tree, so `git status` in the worktree is clean when its files are the tree's.
//
// Refused with EINVALID: a workspace that is not a worktree on a branch, an unusable
// identity or message, a Tree that is not a full object id, a sparse checkout (its
// snapshot would record the files outside the cone as deleted); with ENOTFOUND a tree
// the repository does not hold. Confined, git may read the repository's git directory
// and write only the object store, refs and reflogs and a private temporary directory
// under the data dir — less than the worker itself had.
func (m *Manager) CommitVerified(ctx context.Context, ws *Workspace, c CommitInfo) (string, error) {
	if ws == nil || !ws.worktree || ws.branch == "" {
		return "", models.Errorf(models.EINVALID, "only a worktree on a branch can be committed")
	}
	if err := ValidBranch(ws.branch); err != nil {
		return "", err
	}
	committer, msg, err := c.check()
	if err != nil {
		return "", err
	}
	gitDir, err := repoGitDir(ws.repo)
	if err != nil {
		return "", err
	}
	tmp, err := m.privateTemp("commit-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	index := filepath.Join(tmp, "index")

	// git finds the repository through --git-dir, never through the worktree's .git
	// file or administrative directory, which the worker could write; it has no work
	// tree at all.
	acc := access{read: []string{gitDir}, write: append(storeWrite(gitDir), tmp)}
	g := func(stdin []byte, env []string, args ...string) ([]byte, error) {
		return m.run(ctx, gitRun{dir: tmp, stdin: stdin, read: acc.read, write: acc.write,
			env:  append([]string{"GIT_INDEX_FILE=" + index}, env...),
			args: append([]string{"--git-dir=" + gitDir, "-c", "core.splitIndex=false", "-c", "core.untrackedCache=false"}, args...)})
	}
	if out, err := g(nil, nil, "config", "--type=bool", "--default=false", "core.sparseCheckout"); err != nil {
		return "", err
	} else if strings.TrimSpace(string(out)) == "true" {
		return "", models.Errorf(models.EINVALID, "the repository uses a sparse checkout: files outside it would be committed as deleted")
	}
	if out, err := g(nil, nil, "cat-file", "-t", c.Tree); err != nil || strings.TrimSpace(string(out)) != "tree" {
		return "", models.Errorf(models.ENOTFOUND, "the judged tree %s is not in %s: export the candidate first", short(c.Tree), ws.repo)
	}
	ref := "refs/heads/" + ws.branch
	out, err := g(nil, nil, "rev-parse", "--verify", "-q", "--end-of-options", ref+"^{commit}")
	if err != nil {
		if exitCode(err) == 1 {
			return "", models.Errorf(models.ECONFLICT, "branch %s is gone from %s", ws.branch, ws.repo)
		}
		return "", err
	}
	tip := strings.TrimSpace(string(out))
	tree := c.Tree
	// The index the worktree gets afterwards: the tree, without file stats.
	if _, err := g(nil, nil, "read-tree", tree); err != nil {
		return "", err
	}

	// The same tree under the same words by the same people: this verification is
	// already recorded.
	if out, err := g(nil, nil, "show", "-s", "--no-show-signature", "--format=%T%n%an%n%ae%n%cn%n%ce%n%B", tip); err == nil {
		parts := strings.SplitN(string(out), "\n", 6)
		if len(parts) == 6 && parts[0] == tree && parts[1] == c.Author.Name && parts[2] == c.Author.Email &&
			parts[3] == committer.Name && parts[4] == committer.Email && strings.TrimSpace(parts[5]) == strings.TrimSpace(msg) {
			m.syncIndex(ws, index)
			return tip, nil
		}
	}

	env := append(c.Author.env("AUTHOR"), committer.env("COMMITTER")...)
	out, err = g([]byte(msg), env, "-c", "commit.gpgSign=false", "commit-tree", "--no-gpg-sign", "-p", tip, "-F", "-", tree)
	if err != nil {
		return "", err
	}
	commit := strings.TrimSpace(string(out))
	if !isCommitID(commit) {
		return "", fmt.Errorf("git commit-tree printed %q, not a commit id", commit)
	}
	if _, err := g(nil, nil, "update-ref", "-m", "countersign: verified", ref, commit, tip); err != nil {
		return "", fmt.Errorf("branch %s moved while it was being committed: %w", ws.branch, err)
	}
	m.syncIndex(ws, index)
	return commit, nil
}

// check validates c and returns its committer (DefaultCommitter when none is named)
// and its message.
func (c CommitInfo) check() (Identity, string, error) {
	if !isCommitID(c.Tree) {
		return Identity{}, "", &models.Error{Code: models.EINVALID, Message: "the verified commit needs the judged tree's full id",
			Fields: map[string]string{"tree": "must be a full object id"}}
	}
	if err := c.Author.check("author"); err != nil {
		return Identity{}, "", err
	}
	committer := c.Committer
	if committer == (Identity{}) {
		committer = DefaultCommitter
	}
	if err := committer.check("committer"); err != nil {
		return Identity{}, "", err
	}
	msg, err := message(c.Subject, c.Body, c.Trailers)
	if err != nil {
		return Identity{}, "", err
	}
	return committer, msg, nil
}

// WorktreeTree writes the tree of the worktree ws as it is on disk into its
// repository — every file .gitignore does not ignore, and every file the branch
// tracks, hashed afresh into a private index — and returns its id.
//
// TRANSITIONAL: this is what CommitVerified used to commit, kept only so that the
// runner (runner/land.go) lands something until it passes the candidate's tree from
// the judge's snapshot (judge.Store.Snapshot, issue 30 item 1). It honours the
// worker's .gitignore and reads the worktree after the checks ran: exactly what the
// candidate snapshot fixes. Do not use it for anything new.
func (m *Manager) WorktreeTree(ctx context.Context, ws *Workspace) (string, error) {
	if ws == nil || !ws.worktree || ws.branch == "" {
		return "", models.Errorf(models.EINVALID, "only a worktree on a branch can be committed")
	}
	gitDir, err := repoGitDir(ws.repo)
	if err != nil {
		return "", err
	}
	tmp, err := m.privateTemp("tree-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	acc := access{read: []string{gitDir, ws.Dir}, write: append(storeWrite(gitDir), tmp)}
	g := func(args ...string) ([]byte, error) {
		return m.run(ctx, gitRun{dir: ws.Dir, read: acc.read, write: acc.write,
			env:  []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")},
			args: append([]string{"--git-dir=" + gitDir, "--work-tree=" + ws.Dir, "-c", "core.splitIndex=false", "-c", "core.untrackedCache=false"}, args...)})
	}
	if _, err := g("read-tree", "refs/heads/"+ws.branch); err != nil {
		return "", err
	}
	if _, err := g("add", "-A", "--", "."); err != nil {
		return "", err
	}
	out, err := g("write-tree")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// syncIndex puts the index CommitVerified built in place of the worktree's own, so the
// worktree's status matches the commit. It is a convenience for whoever looks at the
// worktree next, never relied on: it is skipped when the worktree's administrative
// directory is not a real directory, and the file is renamed into place, replacing
// whatever the worker left there (a link included) rather than writing through it.
func (m *Manager) syncIndex(ws *Workspace, index string) {
	admin := filepath.Join(ws.repo, ".git", "worktrees", filepath.Base(ws.Dir))
	if fi, err := os.Lstat(admin); err != nil || !fi.IsDir() {
		return
	}
	b, err := os.ReadFile(index)
	if err != nil {
		return
	}
	f, err := os.CreateTemp(admin, "countersign-index-")
	if err != nil {
		return
	}
	_, werr := f.Write(b)
	if cerr := f.Close(); werr != nil || cerr != nil {
		os.Remove(f.Name())
		return
	}
	if err := os.Rename(f.Name(), filepath.Join(admin, "index")); err != nil {
		os.Remove(f.Name())
	}
}

// privateTemp makes a directory for one git operation under <root>/gittmp, which no
// confined worker is granted: what git reads from it (an index) is the runner's alone.
func (m *Manager) privateTemp(prefix string) (string, error) {
	parent := filepath.Join(m.root, "gittmp")
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", err
	}
	return os.MkdirTemp(parent, prefix)
}

// TreeOf returns the id of the tree of rev (a full commit id or a branch name) in
// repo: two commits with the same tree hold the same files. Confined, git only reads
// the checkout.
func (m *Manager) TreeOf(ctx context.Context, repo, rev string) (string, error) {
	arg, err := revArg(rev)
	if err != nil {
		return "", err
	}
	repo, err = repoDir(repo)
	if err != nil {
		return "", err
	}
	return m.treeOf(ctx, repo, arg)
}

// treeOf is TreeOf for a validated revision argument.
func (m *Manager) treeOf(ctx context.Context, repo, arg string) (string, error) {
	out, err := m.run(ctx, gitRun{dir: repo, read: []string{repo},
		args: []string{"rev-parse", "--verify", "-q", "--end-of-options", arg + "^{tree}"}})
	if exitCode(err) == 1 {
		return "", models.Errorf(models.ENOTFOUND, "%s is not a commit of %s", strings.TrimPrefix(arg, "refs/heads/"), repo)
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// DefaultTarget returns the branch checked out in repo — where verified work lands
// when a task names no target. A detached HEAD has none: ECONFLICT. Confined, git only
// reads the checkout.
func (m *Manager) DefaultTarget(ctx context.Context, repo string) (string, error) {
	repo, err := repoDir(repo)
	if err != nil {
		return "", err
	}
	out, err := m.run(ctx, gitRun{dir: repo, read: []string{repo}, args: []string{"symbolic-ref", "-q", "HEAD"}})
	if exitCode(err) == 1 {
		return "", models.Errorf(models.ECONFLICT, "%s has a detached HEAD: name the branch work should land on", repo)
	}
	if err != nil {
		return "", err
	}
	ref := strings.TrimSpace(string(out))
	name, ok := strings.CutPrefix(ref, "refs/heads/")
	if !ok || ValidBranch(name) != nil {
		return "", models.Errorf(models.ECONFLICT, "%s has %q checked out, which is not a branch the runner can use", repo, ref)
	}
	return name, nil
}

// errNotVerified is what every *NotVerifiedError matches with errors.Is.
var errNotVerified = errors.New("not what was verified")

// NotVerifiedError refuses a merge whose branch no longer holds what was verified.
type NotVerifiedError struct {
	Branch   string // the branch that was to be merged
	Verified string // the verified commit
	Tip      string // the branch's tip when it was refused
	Reason   string // what differs, in words
}

func (e *NotVerifiedError) Error() string {
	return fmt.Sprintf("branch %s is not what was verified (%s): %s", e.Branch, short(e.Verified), e.Reason)
}

// Is makes errors.Is(err, ErrNotVerified) true.
func (e *NotVerifiedError) Is(target error) bool { return target == errNotVerified }

// ErrNotVerified matches any *NotVerifiedError with errors.Is.
var ErrNotVerified = errNotVerified

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
