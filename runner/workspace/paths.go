package workspace

import (
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/countersign/countersign/models"
)

// Resolve turns a path named by a contract into an absolute path inside w.Dir. It
// rejects absolute paths, paths that climb out with "..", paths into the runner's
// metadata directory, and paths whose existing part resolves through a symlink to
// somewhere outside (a dangling symlink is refused too: writing through it could create
// a file anywhere). The answer holds for the workspace as it is now, so call it once
// the worker has stopped. Refusals are *models.Error with code EINVALID.
func (w *Workspace) Resolve(rel string) (string, error) {
	if rel == "" || strings.ContainsRune(rel, 0) {
		return "", escapes(rel, "path is empty or malformed")
	}
	if filepath.IsAbs(rel) {
		return "", escapes(rel, "")
	}
	clean := filepath.Clean(rel)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", escapes(rel, "")
	}
	if first, _, _ := strings.Cut(clean, "/"); first == MetaDirName {
		return "", escapes(rel, "path is inside the runner's metadata directory")
	}
	full := filepath.Join(w.Dir, clean)

	// Walk up to the deepest part that exists; what does not exist yet cannot be a
	// symlink, so resolving the existing part decides where the whole path lands.
	existing, rest := full, ""
	for {
		_, err := os.Lstat(existing)
		if err == nil {
			break
		}
		if !os.IsNotExist(err) {
			return "", escapes(rel, "")
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = filepath.Dir(existing)
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", escapes(rel, "")
	}
	resolved := filepath.Join(real, rest)
	if !within(w.Dir, resolved) {
		return "", escapes(rel, "")
	}
	if r, err := filepath.Rel(w.Dir, resolved); err == nil {
		if first, _, _ := strings.Cut(r, "/"); first == MetaDirName {
			return "", escapes(rel, "path is inside the runner's metadata directory")
		}
	}
	return resolved, nil
}

// Escape names what makes a contract path that Resolve refuses lead outside the
// workspace: the first symbolic link along it, inside the workspace, that points out
// of it or nowhere (link, absolute), and where it points (target, as the link says).
// Both are empty when no such link is in the way (an absolute path, a "..", nothing
// of it existing yet).
func (w *Workspace) Escape(rel string) (link, target string) {
	clean := filepath.Clean(rel)
	if rel == "" || filepath.IsAbs(clean) || !filepath.IsLocal(clean) {
		return "", ""
	}
	cur := w.Dir
	for _, part := range strings.Split(clean, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil {
			return "", ""
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			continue
		}
		dest, _ := os.Readlink(cur)
		real, err := filepath.EvalSymlinks(cur)
		if err != nil || !within(w.Dir, real) {
			return cur, dest
		}
	}
	return "", ""
}

// within reports whether p is base or below it; both must be clean and absolute.
func within(base, p string) bool {
	r, err := filepath.Rel(base, p)
	return err == nil && r != ".." && !strings.HasPrefix(r, "../")
}

func escapes(rel, msg string) error {
	if msg == "" {
		msg = "path escapes the workspace"
	}
	return models.Errorf(models.EINVALID, "%s: %q", msg, rel)
}

// GitPaths lists what git in a worktree needs outside the worktree itself: it reads
// the repository's git directory (configuration, HEAD, packed refs) and writes only the
// object store, refs and reflogs, and the worktree's own administrative directory. So a
// worker can commit, but cannot plant a hook or change the configuration the runner's
// own git and the people merging its work would run. Both empty for a workspace that
// is not a worktree.
//
// Nothing here is read from the worktree: its .git file is the worker's to write, and
// a "gitdir:" line pointing at a symbolic link would turn into a write rule for
// whatever the link names. The administrative directory is where git puts it for the
// worktree path the manager chose, and is used only while it is a real directory.
func (w *Workspace) GitPaths() (read, write []string) {
	if !w.worktree {
		return nil, nil
	}
	common := filepath.Join(w.repo, ".git")
	write = []string{filepath.Join(common, "objects")}
	admin := filepath.Join(common, "worktrees", filepath.Base(w.Dir))
	if realDirAt(admin) {
		write = append(write, admin)
	}
	// Refs only in the task branches' own directory: a worker commits to its branch,
	// and never moves the target or any branch of the user's (nor tags, nor packed
	// refs). Its siblings' branches share the directory; a merge takes a branch only
	// while its tip is what was verified.
	if ns := branchDir(w.branch); ns != "" {
		for _, d := range []string{filepath.Join(common, "refs", "heads", ns), filepath.Join(common, "logs", "refs", "heads", ns)} {
			if realDirAt(d) {
				write = append(write, d)
			}
		}
	}
	return []string{common}, write
}

// branchDir is the directory of branch's ref under refs/heads ("countersign" for
// countersign/task-7); "" for a branch at the top of refs/heads, whose directory holds
// every branch.
func branchDir(branch string) string {
	if d := path.Dir(branch); d != "." {
		return filepath.FromSlash(d)
	}
	return ""
}

// realDirAt reports whether p is a directory and no component of it is a symbolic
// link: a write rule for it grants exactly it.
func realDirAt(p string) bool {
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() {
		return false
	}
	real, err := filepath.EvalSymlinks(p)
	return err == nil && real == p
}

// Open opens abs, a path Resolve returned, for reading, without following any symbolic
// link and without leaving the workspace, whatever a worker's process did to the path
// since it was resolved, and only a regular file (ErrNotRegular): a FIFO never blocks
// the runner. Every read of a worker's output goes through it: the runner reads with
// rights no worker has.
func (w *Workspace) Open(abs string) (*os.File, error) {
	rel, err := filepath.Rel(w.Dir, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return nil, escapes(abs, "")
	}
	return OpenRegularBeneath(w.Dir, rel)
}

// ReadFile reads abs whole through Open.
func (w *Workspace) ReadFile(abs string) ([]byte, error) {
	f, err := w.Open(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
