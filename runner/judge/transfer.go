package judge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/countersign/countersign/models"
)

// importedRef is the store's ref that keeps an imported commit alive.
func importedRef(commit string) string { return "refs/countersign/imported/" + commit }

// Import brings commit from the user's repository repo (its top directory, or its git
// directory) into the store, under refs/countersign/imported/<commit>. Only the
// commit and its tree are fetched (`git fetch --depth=1`): a snapshot needs the base's
// tree as its parent's and its .gitignore files, never the history, and a repository
// with a long history would otherwise be copied whole on the first task.
//
// The fetch runs in the store: the repository side is git's upload-pack, the one git
// command documented as avoiding the dangerous configuration and hooks of the
// repository it serves (git-upload-pack(1), SECURITY). The store's index-pack
// computes every object's id from its content as it receives it and the fetch checks
// that the commit's whole tree arrived, and fsck checks every object
// (transfer.fsckObjects): an object a worker corrupted in the repository's store is
// refused, never trusted. A commit imported before is not fetched again.
func (s *Store) Import(ctx context.Context, repo, commit string) error {
	if err := checkOID("commit", commit); err != nil {
		return err
	}
	src, err := gitDirOf(repo)
	if err != nil {
		return err
	}
	ref := importedRef(commit)
	if out, err := s.git(ctx, gitCmd{args: []string{"rev-parse", "-q", "--verify", ref}}); err == nil && strings.TrimSpace(string(out)) == commit {
		return nil
	}
	_, err = s.git(ctx, gitCmd{whole: true, args: []string{"fetch", "-q", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules",
		"--depth=1", "--", src, "+" + commit + ":" + ref}})
	if err != nil {
		return fmt.Errorf("importing %s from %s: %w", shortID(commit), repo, err)
	}
	return nil
}

// gitDirOf returns the git directory of repo: repo itself when it is one (a bare
// repository), else repo/.git, which must be a real directory.
func gitDirOf(repo string) (string, error) {
	abs, err := filepath.Abs(repo)
	if err != nil {
		return "", err
	}
	if fi, err := os.Lstat(filepath.Join(abs, "objects")); err == nil && fi.IsDir() {
		if _, err := os.Lstat(filepath.Join(abs, "HEAD")); err == nil {
			return abs, nil
		}
	}
	gd := filepath.Join(abs, ".git")
	if fi, err := os.Lstat(gd); err != nil || !fi.IsDir() {
		return "", models.Errorf(models.EINVALID, "%s is not a git repository with a .git directory", repo)
	}
	return gd, nil
}

// Export makes the objects of the store's commit available in the user's repository
// repo, so that it can be landed there (workspace.CommitVerified commits its tree).
//
// No git command runs in the repository: a fetch there would read its configuration
// (a `url.<x>.insteadOf` can turn the store's path into a command), and a push from
// the store would run the repository's receive hooks, which the worker may have
// written. Instead the store packs the objects (`pack-objects`, leaving out
// everything reachable from the commits imported from this repository, which it
// already holds) and indexes the pack itself (`index-pack`, in the store); the pack
// and its index are then placed in the repository's objects/pack directory, reached
// one directory at a time without following a symbolic link, index last so git never
// sees a pack without one.
func (s *Store) Export(ctx context.Context, repo, commit string) error {
	if err := checkOID("commit", commit); err != nil {
		return err
	}
	dst, err := gitDirOf(repo)
	if err != nil {
		return err
	}
	return s.exportTo(ctx, dst, dst, commit)
}

// exportTo places a pack of commit's objects in dst's objects/pack, leaving out what
// the commits imported from the repository whose git directory is haveDir reach
// ("" leaves nothing out).
func (s *Store) exportTo(ctx context.Context, dst, haveDir, commit string) error {
	var have []string
	if haveDir != "" {
		var err error
		if have, err = s.importedFrom(ctx, haveDir); err != nil {
			return err
		}
	}
	tmp, err := os.MkdirTemp(s.tmpRoot(), "export-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	revs := commit + "\n"
	for _, h := range have {
		revs += "^" + h + "\n"
	}
	tmpPack := filepath.Join(tmp, "tmp.pack")
	f, err := os.OpenFile(tmpPack, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = s.git(ctx, gitCmd{stdin: strings.NewReader(revs), stdout: f,
		args: []string{"pack-objects", "--revs", "--stdout", "-q", "--window=0"}})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// index-pack computes every object's id again as it writes the index.
	out, err := s.git(ctx, gitCmd{args: []string{"index-pack", "-o", filepath.Join(tmp, "tmp.idx"), tmpPack}})
	if err != nil {
		return err
	}
	sum := strings.TrimSpace(strings.TrimPrefix(string(out), "pack\t"))
	if !oidPattern.MatchString(sum) {
		return fmt.Errorf("judge: index-pack printed %q, not a pack checksum", out)
	}
	return placePack(dst, tmp, sum)
}

// importedFrom lists the commits imported into the store that repo holds (asked of
// the repository's object files by the store's git through an alternate, so no
// command reads the repository's configuration): a pack for it leaves out what they
// reach.
func (s *Store) importedFrom(ctx context.Context, repoGitDir string) ([]string, error) {
	out, err := s.git(ctx, gitCmd{args: []string{"for-each-ref", "--format=%(objectname)", "refs/countersign/imported/"}})
	if err != nil {
		return nil, err
	}
	ids := strings.Fields(string(out))
	if len(ids) == 0 {
		return nil, nil
	}
	// cat-file against the repository's object directory alone: an empty temporary
	// repository whose only objects are the repository's.
	probe, err := os.MkdirTemp(s.tmpRoot(), "probe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(probe)
	if _, err := s.git(ctx, gitCmd{noGitDir: true, args: []string{"init", "-q", "--bare", probe}}); err != nil {
		return nil, err
	}
	out, err = s.git(ctx, gitCmd{noGitDir: true, stdin: strings.NewReader(strings.Join(ids, "\n") + "\n"),
		env:  []string{"GIT_OBJECT_DIRECTORY=" + filepath.Join(repoGitDir, "objects")},
		args: []string{"--git-dir=" + probe, "cat-file", "--batch-check=%(objectname) %(objecttype)"}})
	if err != nil {
		return nil, err
	}
	var have []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[1] == "commit" {
			have = append(have, f[0])
		}
	}
	return have, nil
}

// followPackLinks is a test-only switch that turns placePack's refusal of links off.
var followPackLinks = false

// placePack moves tmp/tmp.pack and tmp/tmp.idx to gitDir/objects/pack as
// pack-<sum>.pack and .idx. Each directory on the way is opened with O_NOFOLLOW, so a
// link a worker put in place of objects/ or objects/pack/ is refused rather than
// written through.
func placePack(gitDir, tmp, sum string) error {
	nofollow := unix.O_NOFOLLOW
	if followPackLinks {
		nofollow = 0
	}
	fd, err := unix.Open(gitDir, unix.O_RDONLY|unix.O_DIRECTORY|nofollow|unix.O_CLOEXEC, 0)
	if err != nil {
		return models.Errorf(models.EINVALID, "opening %s: %v", gitDir, err)
	}
	for _, name := range []string{"objects", "pack"} {
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|nofollow|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return models.Errorf(models.EINVALID, "%s/%s is not a directory of the repository's own: %v", gitDir, name, err)
		}
		fd = next
	}
	defer unix.Close(fd)
	for _, ext := range []string{".pack", ".idx"} {
		if err := copyInto(fd, filepath.Join(tmp, "tmp"+ext), "pack-"+sum+ext); err != nil {
			return err
		}
	}
	return nil
}

// copyInto writes the file src into the directory dirfd as name: a temporary file
// made there (O_EXCL, so nothing already there is written through), then renamed.
// A pack already there with that name holds the same objects and is kept.
func copyInto(dirfd int, src, name string) error {
	if err := unix.Faccessat(dirfd, name, unix.F_OK, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		return nil
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	tmpName := ".countersign-" + name + ".tmp"
	_ = unix.Unlinkat(dirfd, tmpName, 0)
	fd, err := unix.Openat(dirfd, tmpName, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o444)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmpName)
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(dirfd, tmpName, dirfd, name)
	}
	if werr != nil {
		_ = unix.Unlinkat(dirfd, tmpName, 0)
		return werr
	}
	return nil
}

// short is the first 12 digits of an id, for messages.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
