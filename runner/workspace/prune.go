package workspace

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/countersign/countersign/models"
)

// Remove removes task taskID's worktree of repo (<root>/worktrees/<taskID>, its files
// and git's record of it; nothing when it is not there) and, when branch is not empty,
// deletes that branch from repo — whether or not it was merged, so name it only once
// its verified commit has landed or is no longer wanted. Briefs and logs stay. Names
// are validated before git runs (EINVALID). Confined, git may write the checkout and
// the worktrees directory, as when the worktree was added.
func (m *Manager) Remove(ctx context.Context, repo string, taskID int64, branch string) error {
	if taskID <= 0 {
		return models.Errorf(models.EINVALID, "task id must be positive")
	}
	if branch != "" {
		if err := ValidBranch(branch); err != nil {
			return err
		}
	}
	repo, err := repoDir(repo)
	if err != nil {
		return err
	}
	dir := filepath.Join(m.root, "worktrees", strconv.FormatInt(taskID, 10))
	m.gitMu.Lock()
	defer m.gitMu.Unlock()
	if _, err := os.Lstat(dir); err == nil {
		if _, err := m.git(ctx, repo, "worktree", "remove", "--force", dir); err != nil {
			// A worktree git will not remove (a submodule in it, a lock) or one that is
			// not registered in repo: its files go anyway; they are not evidence.
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
		}
	}
	if _, err := m.git(ctx, repo, "worktree", "prune"); err != nil {
		return err
	}
	if branch == "" {
		return nil
	}
	if _, found, err := m.resolveCommit(ctx, repo, access{read: []string{repo}}, "refs/heads/"+branch); err != nil || !found {
		return err
	}
	_, err = m.git(ctx, repo, "branch", "-D", "--", branch)
	return err
}

// Prune removes the worktrees under <root>/worktrees whose task keep says is no longer
// needed, with git's record of each in its repository, and returns the directories it
// removed. Entries whose name is not a task id are left alone. The repository is
// found through the worktree's .git file, which the worker could write, so it is used
// only when it names <repo>/.git/worktrees/<name> outside the data dir, and only for
// `git worktree prune`, which forgets worktrees whose directories are gone. Errors
// are collected; the worktrees that could be removed are.
func (m *Manager) Prune(ctx context.Context, keep func(taskID int64) bool) ([]string, error) {
	base := filepath.Join(m.root, "worktrees")
	entries, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m.gitMu.Lock()
	defer m.gitMu.Unlock()
	var removed []string
	var errs []error
	for _, e := range entries {
		id, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil || id <= 0 || strconv.FormatInt(id, 10) != e.Name() || keep(id) {
			continue
		}
		dir := filepath.Join(base, e.Name())
		gitDir := m.worktreeRepo(dir)
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, dir)
		if gitDir == "" {
			continue
		}
		if _, err := m.run(ctx, gitRun{dir: filepath.Dir(gitDir), read: []string{gitDir}, write: []string{filepath.Join(gitDir, "worktrees")},
			args: []string{"--git-dir=" + gitDir, "worktree", "prune"}}); err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// worktreeRepo reads a worktree's .git file and returns the git directory it names —
// <repo>/.git of the repository the worktree belongs to — or "" when the file is not
// a plausible one (it is the worker's to write).
func (m *Manager) worktreeRepo(dir string) string {
	f := filepath.Join(dir, ".git")
	if fi, err := os.Lstat(f); err != nil || !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return ""
	}
	fh, err := os.Open(f)
	if err != nil {
		return ""
	}
	b, err := io.ReadAll(io.LimitReader(fh, 4096))
	fh.Close()
	if err != nil {
		return ""
	}
	admin, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok || !filepath.IsAbs(admin) || filepath.Clean(admin) != admin {
		return ""
	}
	gitDir := filepath.Dir(filepath.Dir(admin))
	if filepath.Base(filepath.Dir(admin)) != "worktrees" || filepath.Base(gitDir) != ".git" || within(m.root, gitDir) {
		return ""
	}
	if real, err := filepath.EvalSymlinks(gitDir); err != nil || real != gitDir {
		return ""
	}
	return gitDir
}

// DiskUsage returns the bytes the task workspaces take: the apparent size of every
// file under <root>/worktrees and <root>/tasks, walked without following symbolic
// links. Files that vanish during the walk (a worker still running) are skipped.
func (m *Manager) DiskUsage() (int64, error) {
	var total int64
	for _, d := range []string{"worktrees", "tasks"} {
		err := filepath.WalkDir(filepath.Join(m.root, d), func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if e.Type().IsRegular() {
				fi, err := e.Info()
				if err != nil {
					if errors.Is(err, fs.ErrNotExist) {
						return nil
					}
					return err
				}
				total += fi.Size()
			}
			return nil
		})
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
