// Package workspace lays out where a task's worker runs and where the runner keeps the
// task's briefs and logs, and confines every path a contract names to that workspace.
//
// Layout under the data dir root:
//
//	<root>/tasks/<task_id>/      default working directory, kept across attempts
//	<root>/meta/<task_id>/       brief-<n>.md and attempt-<n>.log, always here
//	<root>/worktrees/<task_id>/  a git worktree when the agent asks for one
//	<root>/gittmp/               the runner's own scratch files for git (a commit's index)
//
// A worktree task can work on a branch of its own (Request.Branch): CommitVerified
// commits the verified files onto it, Merge lands them on the target only if they are
// what was verified, Push publishes a branch, Compare and Diff show it, and Remove,
// Cleanup and Prune take the worktrees away again.
//
// The meta directory lies outside every workspace: a confined worker may write its
// workspace, and the runner writes briefs and logs with its own rights, so a meta
// directory inside the workspace would let the worker aim those writes anywhere with
// a symbolic link.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/sandbox"
)

// MetaDirName is the subdirectory of a task directory that held the runner's own
// files before they moved out of the workspace (<root>/meta/<task_id>). Resolve still
// refuses contract paths inside it, so a workspace laid out by an older version
// cannot satisfy a file contract with its own brief.
const MetaDirName = ".countersign"

// Manager creates and removes task workspaces under one data dir. It is safe for
// concurrent use.
type Manager struct {
	root string // absolute, symlinks resolved, so confinement checks compare real paths

	// gitMu serialises worktree add/remove: concurrent ones on one repository race on
	// its administrative files.
	gitMu sync.Mutex

	// sandbox confines the git commands the manager runs; nil runs them unconfined.
	sandbox *sandbox.Sandbox

	// trace, when set (by tests), sees the argv of every git command before it runs.
	trace func(argv []string)
}

// Confine makes every git command the manager runs confined by sb: git reads the
// repository's configuration, which a worker that works in it may have written. Call
// it before the manager is used.
func (m *Manager) Confine(sb *sandbox.Sandbox) { m.sandbox = sb }

// Request says which workspace to prepare.
type Request struct {
	TaskID       int64
	Attempt      int    // 1-based
	AgentWorkdir string // the worker agent's own directory (absolute); empty for a fresh one
	Worktree     bool   // a git worktree of AgentWorkdir per task instead of the directory itself

	// Branch, for a worktree, is the branch the task works on (countersign/task-42):
	// the first attempt creates it from Base and checks it out in the task's worktree;
	// later attempts reuse the worktree, or the branch when the worktree is gone. Empty
	// keeps the worktree detached at the checkout's HEAD, as before branches existed.
	// It must be a plain branch name (see ValidBranch); anything else is refused before
	// git runs.
	Branch string
	// Base is where Branch starts: a local branch name (the target, "main") or a full
	// commit id (a previous step's verified commit). Empty means the checkout's HEAD.
	// Only with Branch.
	Base string
}

// ErrNotRegular refuses to open what is not a regular file (a FIFO, a device, a
// directory) where the runner reads a worker's file.
var ErrNotRegular = errors.New("not a regular file")

// Workspace is a prepared task workspace.
type Workspace struct {
	// Dir is where the worker runs and where contract paths are resolved; absolute,
	// symlinks resolved.
	Dir string
	// MetaDir holds the task's briefs and logs; always under the data dir.
	MetaDir string
	// TaskID is the task the workspace belongs to.
	TaskID int64

	repo     string // for a worktree: the repository it was added to
	worktree bool
	// made says Dir is the directory the runner keeps for TaskID alone (neither the
	// agent's workdir nor a worktree); created says this Prepare made it, empty.
	made, created bool
	branch        string // the worktree's branch; empty when detached
	baseCommit    string // the commit the branch started from
}

// Repo is the checkout a worktree was added to (absolute, symlinks resolved); empty
// for a workspace that is not a worktree.
func (w *Workspace) Repo() string { return w.repo }

// Branch is the branch the worktree was prepared on (Request.Branch); empty for a
// detached worktree or a workspace that is not a worktree.
func (w *Workspace) Branch() string { return w.branch }

// BaseCommit is the full id of the commit Branch started from: Request.Base resolved
// when the branch was created, and on a later attempt where the branch left Base (their
// merge base), so the same task reports the same base on every attempt unless Base was
// rewritten. Empty when Branch is, and on a later attempt whose Base no longer exists.
func (w *Workspace) BaseCommit() string { return w.baseCommit }

// New returns a Manager rooted at root, creating root/tasks if needed.
func New(root string) (*Manager, error) {
	if root == "" {
		return nil, models.Errorf(models.EINVALID, "workspace root is empty")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("workspace root: %w", err)
	}
	for _, d := range []string{"tasks", "meta"} {
		if err := os.MkdirAll(filepath.Join(abs, d), 0o750); err != nil {
			return nil, fmt.Errorf("workspace root: %w", err)
		}
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace root: %w", err)
	}
	return &Manager{root: real}, nil
}

// Root returns the data dir the Manager works under (absolute, symlinks resolved).
func (m *Manager) Root() string { return m.root }

// Prepare makes the workspace for one attempt of a task and returns it. Preparing the
// same task again returns the same directories with their contents, so that a revision
// sees what the previous attempt wrote and a task taken over from a dead runner picks
// up where it was. Errors in the request are *models.Error with code EINVALID; anything
// else (file system, git) is an infrastructure failure.
func (m *Manager) Prepare(ctx context.Context, req Request) (*Workspace, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	id := strconv.FormatInt(req.TaskID, 10)
	taskDir := filepath.Join(m.root, "tasks", id)
	ws := &Workspace{Dir: taskDir, MetaDir: filepath.Join(m.root, "meta", id), TaskID: req.TaskID}
	// A task's files are what it needs and no more (each new inode costs on a busy
	// file system): its meta dir always, its own directory only when it runs there.
	if _, err := makeDir(ws.MetaDir); err != nil {
		return nil, fmt.Errorf("prepare task %d: %w", req.TaskID, err)
	}
	if !req.Worktree && req.AgentWorkdir == "" {
		created, err := makeDir(taskDir)
		if err != nil {
			return nil, fmt.Errorf("prepare task %d: %w", req.TaskID, err)
		}
		ws.made, ws.created = true, created
	}

	switch {
	case req.Worktree:
		if err := m.prepareWorktree(ctx, req, ws); err != nil {
			return nil, err
		}
	case req.AgentWorkdir != "":
		dir, err := realDir(req.AgentWorkdir)
		if err != nil {
			return nil, err
		}
		ws.Dir = dir
	}
	return ws, nil
}

// makeDir makes dir, whose parent exists (New made it), and reports whether it made
// it; a dir that exists is kept as it is. One mkdir, where MkdirAll would stat first.
func makeDir(dir string) (created bool, err error) {
	err = os.Mkdir(dir, 0o750)
	if errors.Is(err, fs.ErrExist) {
		if fi, statErr := os.Stat(dir); statErr == nil && fi.IsDir() {
			return false, nil
		}
	}
	return err == nil, err
}

// StartedEmpty reports that Dir is the directory the runner keeps for TaskID alone and
// that it held nothing before the task's first attempt: this Prepare made it, or
// attempt is a later one of the task (only the first attempt's Prepare can find it
// already there, left by an earlier database that reused the id). Its files are then
// all the task's own work, and no stamp of what was there before is needed.
func (w *Workspace) StartedEmpty(attempt int) bool {
	return w.made && filepath.Base(w.Dir) == strconv.FormatInt(w.TaskID, 10) && (w.created || attempt > 1)
}

// checkRequest validates a Prepare request (EINVALID).
func checkRequest(req Request) error {
	var fe models.FieldErrors
	if req.TaskID <= 0 {
		fe.Add("task_id", "must be positive")
	}
	if req.Attempt < 1 {
		fe.Add("attempt", "must be 1 or more")
	}
	if req.AgentWorkdir != "" && !filepath.IsAbs(req.AgentWorkdir) {
		// A relative workdir would depend on where the runner happens to be started.
		fe.Add("workdir", "must be an absolute path")
	}
	if req.Worktree && req.AgentWorkdir == "" {
		fe.Add("worktree", "needs a workdir to take worktrees of")
	}
	if req.Branch != "" {
		if !req.Worktree {
			fe.Add("branch", "needs a worktree")
		} else if err := ValidBranch(req.Branch); err != nil {
			fe.Add("branch", err.Error())
		}
	}
	if req.Base != "" {
		if req.Branch == "" {
			fe.Add("base", "needs a branch")
		} else if _, err := revArg(req.Base); err != nil {
			fe.Add("base", err.Error())
		}
	}
	return fe.Err()
}

// prepareWorktree adds the worktree (on req.Branch when set) of the repository at
// req.AgentWorkdir for the task and points ws at it.
func (m *Manager) prepareWorktree(ctx context.Context, req Request, ws *Workspace) error {
	id := strconv.FormatInt(req.TaskID, 10)
	repo, err := realDir(req.AgentWorkdir)
	if err != nil {
		return err
	}
	var dir, base string
	if req.Branch == "" {
		dir, err = m.addWorktree(ctx, repo, filepath.Join(m.root, "worktrees", id))
	} else {
		dir, base, err = m.addBranchWorktree(ctx, repo, filepath.Join(m.root, "worktrees", id), req.Branch, req.Base)
	}
	if err != nil {
		var me *models.Error
		if errors.As(err, &me) {
			return err
		}
		return fmt.Errorf("prepare task %d: %w", req.TaskID, err)
	}
	ws.Dir, ws.repo, ws.worktree = dir, repo, true
	ws.branch, ws.baseCommit = req.Branch, base
	if ns := branchDir(req.Branch); ns != "" {
		// The directories a worker may write its branch's ref and reflog in exist
		// before the confinement names them (a packed branch has no loose ref yet).
		for _, d := range []string{filepath.Join(repo, ".git", "refs", "heads", ns), filepath.Join(repo, ".git", "logs", "refs", "heads", ns)} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("prepare task %d: %w", req.TaskID, err)
			}
		}
	}
	return nil
}

// repoDir resolves the checkout an operation names, which must be an absolute path to
// a directory.
func repoDir(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", &models.Error{Code: models.EINVALID, Message: "the repository must be an absolute path",
			Fields: map[string]string{"repo": "must be an absolute path"}}
	}
	return existingDir(p, "repo", "the repository is not usable")
}

// realDir resolves an agent's workdir, which must exist and be a directory.
func realDir(p string) (string, error) {
	return existingDir(p, "workdir", "agent workdir is not usable")
}

// existingDir resolves p's symbolic links and checks that it is a directory; a failure
// is EINVALID with message, naming the cause in field.
func existingDir(p, field, message string) (string, error) {
	real, err := filepath.EvalSymlinks(p)
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(real); err == nil && !fi.IsDir() {
			err = errors.New("not a directory")
		}
	}
	if err != nil {
		return "", &models.Error{Code: models.EINVALID, Message: message,
			Fields: map[string]string{field: err.Error()}}
	}
	return real, nil
}

// addWorktree adds a detached worktree of repo's HEAD at dir, or reuses the one already
// there (a later attempt of the same task must see the earlier attempt's changes).
func (m *Manager) addWorktree(ctx context.Context, repo, dir string) (string, error) {
	m.gitMu.Lock()
	defer m.gitMu.Unlock()
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		return filepath.EvalSymlinks(dir)
	}
	// A directory without .git is the remains of an interrupted add; git refuses to add
	// over a non-empty directory, and what is in it was never a worker's output.
	if _, err := os.Lstat(dir); err == nil {
		if err := os.RemoveAll(dir); err != nil {
			return "", err
		}
	}
	// prune forgets worktrees whose directories are gone, which would otherwise make
	// git refuse to register the path again.
	if _, err := m.git(ctx, repo, "worktree", "prune"); err != nil {
		return "", err
	}
	if _, err := m.git(ctx, repo, "worktree", "add", "--detach", dir, "HEAD"); err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(dir)
}

// addBranchWorktree adds a worktree of repo at dir on a new branch made from base (the
// checkout's HEAD when base is empty) and returns the worktree and the commit the
// branch started from. A later attempt reuses the worktree when it is there, or checks
// the branch out again when only the worktree is gone; its base is then where the
// branch left base. branch and base have been validated.
func (m *Manager) addBranchWorktree(ctx context.Context, repo, dir, branch, base string) (string, string, error) {
	m.gitMu.Lock()
	defer m.gitMu.Unlock()
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		return "", "", err
	}
	baseRev := "HEAD"
	if base != "" {
		var err error
		if baseRev, err = revArg(base); err != nil {
			return "", "", err
		}
	}
	reading := access{read: []string{repo}}
	baseCommit, found, err := m.resolveCommit(ctx, repo, reading, baseRev)
	if err != nil {
		return "", "", err
	}
	tip, exists, err := m.resolveCommit(ctx, repo, reading, "refs/heads/"+branch)
	if err != nil {
		return "", "", err
	}
	if !found && !exists {
		return "", "", models.Errorf(models.ENOTFOUND, "base %q is not a commit of %s", base, repo)
	}
	forkPoint := func() (string, error) {
		if !found {
			// The branch is there and its base is gone (renamed, deleted): the task goes
			// on; the base recorded at its first attempt stands.
			return "", nil
		}
		out, err := m.run(ctx, gitRun{dir: repo, read: []string{repo}, args: []string{"merge-base", baseCommit, tip}})
		if exitCode(err) == 1 { // no common history: report the base as given
			return baseCommit, nil
		}
		return strings.TrimSpace(string(out)), err
	}

	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return "", "", err
		}
		if !exists {
			// A worktree made before the task had a branch: give it one at the base, so
			// that the verified commit has somewhere to go.
			if _, err := m.git(ctx, repo, "branch", "--no-track", branch, baseCommit); err != nil {
				return "", "", err
			}
			return real, baseCommit, nil
		}
		fp, err := forkPoint()
		return real, fp, err
	}
	if _, err := os.Lstat(dir); err == nil {
		if err := os.RemoveAll(dir); err != nil {
			return "", "", err
		}
	}
	if _, err := m.git(ctx, repo, "worktree", "prune"); err != nil {
		return "", "", err
	}
	if exists {
		if _, err := m.git(ctx, repo, "worktree", "add", "--", dir, branch); err != nil {
			return "", "", err
		}
		if baseCommit, err = forkPoint(); err != nil {
			return "", "", err
		}
	} else if _, err := m.git(ctx, repo, "worktree", "add", "--no-track", "-b", branch, "--", dir, baseCommit); err != nil {
		return "", "", err
	}
	real, err := filepath.EvalSymlinks(dir)
	return real, baseCommit, err
}

// access is what a git command may touch when the manager is confined.
type access struct {
	read  []string
	write []string
}

// resolveCommit resolves rev (a full commit id, refs/heads/<name> or HEAD) to the full
// id of the commit it names in repo; found is false when there is none.
func (m *Manager) resolveCommit(ctx context.Context, repo string, a access, rev string) (id string, found bool, err error) {
	out, err := m.run(ctx, gitRun{dir: repo, read: a.read, write: a.write,
		args: []string{"rev-parse", "--verify", "-q", "--end-of-options", rev + "^{commit}"}})
	if exitCode(err) == 1 {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return strings.TrimSpace(string(out)), true, nil
}

// Cleanup removes what Prepare made that is not evidence: a worktree is removed (with
// --force, since the verified output has been recorded by then); its branch, the task
// directory and its briefs and logs stay. Remove also deletes the branch.
func (m *Manager) Cleanup(ctx context.Context, ws *Workspace) error {
	if ws == nil || !ws.worktree {
		return nil
	}
	m.gitMu.Lock()
	defer m.gitMu.Unlock()
	if _, err := m.git(ctx, ws.repo, "worktree", "remove", "--force", ws.Dir); err != nil {
		if _, serr := os.Stat(ws.Dir); !os.IsNotExist(serr) {
			return err
		}
		// Already gone from disk: only git's record of it is left.
		_, err = m.git(ctx, ws.repo, "worktree", "prune")
		return err
	}
	return nil
}

// BriefPath is where the brief of attempt n is written.
func (w *Workspace) BriefPath(attempt int) string {
	return filepath.Join(w.MetaDir, fmt.Sprintf("brief-%d.md", attempt))
}

// LogPath is where the combined output of attempt n is written.
func (w *Workspace) LogPath(attempt int) string {
	return filepath.Join(w.MetaDir, fmt.Sprintf("attempt-%d.log", attempt))
}
