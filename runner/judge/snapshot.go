package judge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/countersign/countersign/models"
)

// SnapshotRequest says what to snapshot.
type SnapshotRequest struct {
	// Dir is the workspace. The worker's processes must all be gone: the snapshot is
	// what they left.
	Dir string
	// IgnoreFrom is a commit in the store whose .gitignore files decide what is
	// ignored — the base's, for a candidate, so the worker's own .gitignore files are
	// ordinary files of its result and decide nothing. "" takes the .gitignore files in
	// Dir as they are now, with git's own per-directory rules: for the base, before any
	// worker ran.
	IgnoreFrom string
	// Parent is the snapshot's parent commit in the store, or "". Every path its tree
	// holds stays tracked (it is in the snapshot when it is in Dir, ignored or not),
	// as in git.
	Parent string
	// Force are workspace-relative paths always included when they exist, even when
	// ignored: the contract's output files.
	Force []string
	// Exclude are workspace-relative paths (files or directories) never included,
	// whatever the rules and Force say: the runner's meta directory.
	Exclude []string
	// Message is the commit message ("countersign snapshot" when empty).
	Message string
	// Ref, when set, is pointed at the snapshot so it stays alive in the store; it
	// must be under refs/countersign/.
	Ref string
}

// Snapshot is a snapshot in the store.
type Snapshot struct {
	Commit string // the snapshot's commit
	Tree   string // its tree: what a check judges and what lands
	// Skipped are directories left out because they hold a git repository of their
	// own (a worker-made nested .git, an untracked submodule): git would record one as
	// a link to a commit, not as files, and the judge takes files only. Whatever the
	// worker put there is absent from the candidate, so absent when it is judged and
	// when it lands alike.
	Skipped []string
}

// snapshotIdent is the fixed author, committer and date of every snapshot: the same
// tree, parent and message always give the same commit id, so a snapshot taken again
// (a runner that restarted) is recognisably the same.
var snapshotIdent = []string{
	"GIT_AUTHOR_NAME=countersign judge", "GIT_AUTHOR_EMAIL=judge@countersign.invalid", "GIT_AUTHOR_DATE=946684800 +0000",
	"GIT_COMMITTER_NAME=countersign judge", "GIT_COMMITTER_EMAIL=judge@countersign.invalid", "GIT_COMMITTER_DATE=946684800 +0000",
}

// honourWorkerIgnore is a test-only switch that turns the first defence off: the
// candidate is listed with the worker's own .gitignore files, as `git add -A` would.
var honourWorkerIgnore = false

// Snapshot records the files of r.Dir as a commit in the store: every file the ignore
// rules of r.IgnoreFrom leave in (see ignore.go), every path r.Parent tracks, and the
// r.Force paths, minus `.git` entries, nested repositories and r.Exclude.
//
// How, all plain git against the store (never the workspace's repository): a private
// index seeded with the parent's tree — with the stat data of the last snapshot of
// the same directory where the judge can trust it (statcache.go), else none, so every
// file is hashed afresh from disk; the untracked candidates from `ls-files --others`
// under the base's rules; `update-index --add --remove --replace` with tracked ∪
// untracked ∪ Force; write-tree; commit-tree with a fixed identity and date;
// update-ref. The store's attributes keep every byte as it is on disk (no line-ending,
// ident or encoding conversion, no filter); a fifo, socket or device is left out. git
// stores a symbolic link as a link and refuses any path beyond one, so nothing
// outside Dir is read; a path the worker put beyond a link (a tracked directory
// replaced by a link) is recorded as deleted.
func (s *Store) Snapshot(ctx context.Context, r SnapshotRequest) (Snapshot, error) {
	dir, excl, err := s.checkRequest(r)
	if err != nil {
		return Snapshot{}, err
	}
	tmp, err := os.MkdirTemp(s.tmpRoot(), "snap-")
	if err != nil {
		return Snapshot{}, err
	}
	defer os.RemoveAll(tmp)
	index := filepath.Join(tmp, "index")
	idx := []string{"GIT_INDEX_FILE=" + index}
	g := func(stdin []byte, args ...string) ([]byte, error) {
		c := gitCmd{dir: dir, env: idx, args: append([]string{"--work-tree=" + dir}, args...)}
		if stdin != nil {
			c.stdin = bytes.NewReader(stdin)
		}
		return s.git(ctx, c)
	}
	var tracked []string
	var trust map[string]statData
	if r.Parent != "" {
		if trust, err = s.seedIndex(ctx, g, dir, r.Parent, index); err != nil {
			return Snapshot{}, err
		}
		if tracked, err = s.trackedFiles(g); err != nil {
			return Snapshot{}, err
		}
	}
	untracked, skipped, err := s.untracked(ctx, g, tmp, r.IgnoreFrom, excl)
	if err != nil {
		return Snapshot{}, err
	}
	paths := append(tracked, untracked...)
	for _, f := range r.Force {
		f = path.Clean(filepath.ToSlash(f))
		if fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(f))); err == nil && fi.IsDir() {
			continue // an output is a file; git would refuse a directory
		}
		paths = append(paths, f)
	}
	if err := s.stage(g, dir, paths, excl, trust); err != nil {
		return Snapshot{}, err
	}
	out, err := g(nil, "write-tree")
	if err != nil {
		return Snapshot{}, err
	}
	snap := Snapshot{Tree: strings.TrimSpace(string(out)), Skipped: skipped}
	s.keepIndex(dir, index)
	msg := r.Message
	if msg == "" {
		msg = "countersign snapshot"
	}
	args := []string{"commit-tree", "--no-gpg-sign", snap.Tree}
	if r.Parent != "" {
		args = append(args, "-p", r.Parent)
	}
	out, err = s.git(ctx, gitCmd{env: snapshotIdent, stdin: strings.NewReader(msg + "\n"), args: args})
	if err != nil {
		return Snapshot{}, err
	}
	snap.Commit = strings.TrimSpace(string(out))
	if checkOID("commit", snap.Commit) != nil || checkOID("tree", snap.Tree) != nil {
		return Snapshot{}, fmt.Errorf("judge: git printed %q and %q, not object ids", snap.Commit, snap.Tree)
	}
	if r.IgnoreFrom == "" && !honourWorkerIgnore {
		if err := s.keepRules(ctx, dir, tmp, snap.Commit, tracked, untracked); err != nil {
			return Snapshot{}, err
		}
	}
	if r.Ref != "" {
		if _, err := s.git(ctx, gitCmd{whole: true, args: []string{"update-ref", "-m", "countersign: snapshot", r.Ref, snap.Commit}}); err != nil {
			return Snapshot{}, err
		}
	}
	return snap, nil
}

// checkRequest validates r and returns its directory (absolute, a real directory)
// and its exclusions (cleaned, slash-separated).
func (s *Store) checkRequest(r SnapshotRequest) (string, []string, error) {
	for field, id := range map[string]string{"ignore_from": r.IgnoreFrom, "parent": r.Parent} {
		if id != "" {
			if err := checkOID(field, id); err != nil {
				return "", nil, err
			}
		}
	}
	if r.Ref != "" {
		if err := checkRef(r.Ref); err != nil {
			return "", nil, err
		}
	}
	if r.Dir == "" {
		return "", nil, models.Errorf(models.EINVALID, "a snapshot needs a workspace directory")
	}
	dir, err := filepath.Abs(r.Dir)
	if err != nil {
		return "", nil, err
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return "", nil, models.Errorf(models.EINVALID, "%s is not a directory", dir)
	}
	var excl []string
	for _, e := range r.Exclude {
		e = path.Clean(filepath.ToSlash(e))
		if !filepath.IsLocal(e) {
			return "", nil, models.Errorf(models.EINVALID, "exclusion %q is not a path inside the workspace", e)
		}
		excl = append(excl, e)
	}
	for _, f := range r.Force {
		if !filepath.IsLocal(filepath.FromSlash(f)) || strings.Contains(f, "\x00") {
			return "", nil, models.Errorf(models.EINVALID, "forced path %q is not a path inside the workspace", f)
		}
	}
	return dir, excl, nil
}

// checkRef accepts only the store's own namespace and names git accepts.
func checkRef(ref string) error {
	ok := strings.HasPrefix(ref, "refs/countersign/") && !strings.ContainsAny(ref, " ~^:?*[\\\x7f") && !strings.Contains(ref, "..") &&
		!strings.Contains(ref, "//") && !strings.HasSuffix(ref, "/") && !strings.HasSuffix(ref, ".lock") && !strings.Contains(ref, "@{")
	for _, r := range ref {
		if r < 0x20 {
			ok = false
		}
	}
	if !ok {
		return models.Errorf(models.EINVALID, "ref %q is not a ref under refs/countersign/", ref)
	}
	return nil
}

// trackedFiles lists the index's paths, leaving out submodules (gitlinks): a tracked
// submodule stays as the parent recorded it, since hashing it would mean reading the
// submodule's own repository, which the worker could write.
func (s *Store) trackedFiles(g func([]byte, ...string) ([]byte, error)) ([]string, error) {
	out, err := g(nil, "ls-files", "-z", "--stage")
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, rec := range bytes.Split(out, []byte{0}) {
		meta, p, ok := strings.Cut(string(rec), "\t")
		if !ok || strings.HasPrefix(meta, "160000 ") {
			continue
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// untracked lists the files of the worktree the index does not hold and the rules
// leave in, and the directories that are repositories of their own.
func (s *Store) untracked(ctx context.Context, g func([]byte, ...string) ([]byte, error), tmp, ignoreFrom string, excl []string) (files, nested []string, err error) {
	args := []string{"ls-files", "-z", "--others"}
	switch {
	case honourWorkerIgnore:
		args = append(args, "--exclude-per-directory=.gitignore")
	case ignoreFrom == "":
		// The base, before any worker ran: git's own per-directory reading.
		args = append(args, "--exclude-per-directory=.gitignore")
	default:
		rules, err := s.ignoreRules(ctx, ignoreFrom)
		if err != nil {
			return nil, nil, err
		}
		file := filepath.Join(tmp, "exclude")
		if err := os.WriteFile(file, rules, 0o600); err != nil {
			return nil, nil, err
		}
		// No --exclude-per-directory: the .gitignore files in the worktree are the
		// worker's, and read as files only.
		args = append(args, "--exclude-from="+file)
	}
	for _, e := range excl {
		// Command-line patterns outrank every file's, a negation included.
		args = append(args, "--exclude="+excludeLine(e))
	}
	out, err := g(nil, args...)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range bytes.Split(out, []byte{0}) {
		switch {
		case len(p) == 0:
		case p[len(p)-1] == '/':
			nested = append(nested, strings.TrimSuffix(string(p), "/"))
		default:
			files = append(files, string(p))
		}
	}
	return files, nested, nil
}

// stage brings every path into the index as it is in dir now: present ones added
// (hashed from disk), absent ones, excluded ones (the runner's own files are never part
// of a snapshot, even when the parent tracked them) and those beyond a symbolic link
// removed; paths with a .git component never enter. A path whose stat data is exactly
// the trusted record (see statcache.go) keeps its entry; every other entry that came
// from the cache is removed before the path is added again, so git hashes it rather
// than compare stat data itself.
func (s *Store) stage(g func([]byte, ...string) ([]byte, error), dir string, paths, excl []string, trust map[string]statData) error {
	var add, drop bytes.Buffer
	seen := make(map[string]bool, len(paths))
	links := map[string]bool{} // directories known to be links or not ("" = root)
	for _, p := range paths {
		if seen[p] || p == "." || p == "" {
			continue
		}
		seen[p] = true
		switch {
		case hasGitComponent(p):
			continue // git refuses them; no snapshot ever holds one
		case excludedPath(p, excl), beyondLink(dir, p, links):
			drop.WriteString(p + "\x00")
			continue
		}
		var st syscall.Stat_t
		err := syscall.Lstat(filepath.Join(dir, filepath.FromSlash(p)), &st)
		switch {
		case err == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR:
			// A file that became a directory: its files are listed on their own.
			drop.WriteString(p + "\x00")
			continue
		case err == nil && st.Mode&syscall.S_IFMT != syscall.S_IFREG && st.Mode&syscall.S_IFMT != syscall.S_IFLNK:
			// A fifo, socket or device is no file of a result (git would refuse it
			// and the whole snapshot with it).
			drop.WriteString(p + "\x00")
			continue
		}
		if trust != nil {
			if rec, ok := trust[p]; ok && err == nil && unchanged(&st, rec) {
				continue
			}
			drop.WriteString(p + "\x00")
		}
		add.WriteString(p + "\x00")
	}
	if drop.Len() > 0 {
		if _, err := g(drop.Bytes(), "update-index", "-z", "--force-remove", "--stdin"); err != nil {
			return err
		}
	}
	if add.Len() > 0 {
		if _, err := g(add.Bytes(), "update-index", "-z", "--add", "--remove", "--replace", "--stdin"); err != nil {
			return err
		}
	}
	return nil
}

// excluded says whether p is one of excl or inside one.
func excludedPath(p string, excl []string) bool {
	for _, e := range excl {
		if p == e || strings.HasPrefix(p, e+"/") {
			return true
		}
	}
	return false
}

// hasGitComponent says whether a path has a component git refuses (.git in any case).
func hasGitComponent(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if strings.EqualFold(c, ".git") {
			return true
		}
	}
	return false
}

// beyondLink says whether a directory on the way to p (inside dir) is a symbolic link
// (or not a directory at all): git refuses such a path, and it is not the
// workspace's to snapshot. known caches the answer per directory.
func beyondLink(dir, p string, known map[string]bool) bool {
	parent := path.Dir(p)
	if parent == "." {
		return false
	}
	if v, ok := known[parent]; ok {
		return v
	}
	v := beyondLink(dir, parent, known)
	if !v {
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(parent)))
		v = err == nil && !fi.IsDir() || err != nil && !errors.Is(err, fs.ErrNotExist)
	}
	known[parent] = v
	return v
}
