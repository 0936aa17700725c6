package judge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/countersign/countersign/models"
)

// The judge's environment (Env) is a copy of a task's workspace as it stood before any
// worker ran: its tracked files and every ignored one (node_modules, .venv, vendor
// builds, caches), without .git and the runner's own directory. It is the lower layer
// every judge's view of that base shares (OpenView), and nothing writes it once it is
// in place: a view writes only its own upper layer. Envs live under
// <root>/judge/envs/<key>; tasks whose base has the same key share one.

// envKeyRE is what a key may be: a file name of its own, never hidden, never a path.
var envKeyRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$`)

// EnvDir is where the Env of key lives under root.
func EnvDir(root, key string) string { return filepath.Join(root, "judge", "envs", key) }

// PrepareEnv returns the Env of key under root, making it from dir first when there is
// none: a copy of dir without its top-level .git and the names in skip (the runner's
// meta dir). Files are reflinked where the file system can (FICLONE), else copied;
// symbolic links are copied as links, never followed; fifos, sockets and devices are
// left out; permission bits (without set-id bits) and modification times are kept, so
// build tools and bytecode caches see the base's artefacts as fresh. The copy is made
// in a temporary directory and renamed into place, so a crash never leaves half an
// Env; concurrent preparers of one key wait for each other (a file lock) and the later
// ones reuse the first's.
func PrepareEnv(ctx context.Context, dir, root, key string, skip ...string) (string, error) {
	if !envKeyRE.MatchString(key) {
		return "", models.Errorf(models.EINVALID, "judge: %q is not an environment key", key)
	}
	final := EnvDir(root, key)
	envs := filepath.Dir(final)
	if err := os.MkdirAll(envs, 0o750); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(envs, ".lock-"+key), os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o640)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	if st, err := os.Lstat(final); err == nil && st.IsDir() {
		return final, nil // renamed into place whole: complete
	}
	// Under the lock, a temporary directory of this key is a crashed preparer's.
	tmp := filepath.Join(envs, ".tmp-"+key)
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	if err := os.Mkdir(tmp, 0o750); err != nil {
		return "", err
	}
	skipSet := map[string]bool{".git": true}
	for _, s := range skip {
		skipSet[s] = true
	}
	if err := copyTree(ctx, dir, tmp, skipSet); err != nil {
		return "", errors.Join(fmt.Errorf("judge: preparing the environment from %s: %w", dir, err), os.RemoveAll(tmp))
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", errors.Join(err, os.RemoveAll(tmp))
	}
	return final, nil
}

// copyTree copies the directory src into the existing directory dst (see PrepareEnv).
// Its top-level entries named in skip are left out. dst gets src's permission bits.
func copyTree(ctx context.Context, src, dst string, skip map[string]bool) error {
	sfd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: src, Err: err}
	}
	dfd, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(sfd)
		return &os.PathError{Op: "open", Path: dst, Err: err}
	}
	c := &copier{ctx: ctx, skip: skip, clone: true, root: os.Geteuid() == 0}
	err = c.dir(sfd, dfd, "")
	var st unix.Stat_t
	if err == nil {
		if err = unix.Fstat(sfd, &st); err == nil {
			err = c.finish(dfd, "", &st)
		}
	}
	unix.Close(sfd)
	unix.Close(dfd)
	return err
}

// copier copies one tree; clone is cleared at the first file the file system cannot
// reflink, so a file system without reflinks costs one failed ioctl, not one a file.
// root: the runner is root and keeps each entry's owner (a check that runs as the
// workspace's owner can write what it could write there).
type copier struct {
	ctx   context.Context
	skip  map[string]bool
	clone bool
	root  bool
}

// dir copies the entries of the directory sfd into the directory dfd; rel is its path
// below the root ("" for the root).
func (c *copier) dir(sfd, dfd int, rel string) error {
	if err := c.ctx.Err(); err != nil {
		return err
	}
	names, err := readNames(sfd)
	if err != nil {
		return &os.PathError{Op: "readdir", Path: rel, Err: err}
	}
	for _, name := range names {
		if rel == "" && c.skip[name] {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(sfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return &os.PathError{Op: "stat", Path: path.Join(rel, name), Err: err}
		}
		if err := c.entry(sfd, dfd, path.Join(rel, name), name, &st); err != nil {
			return err
		}
	}
	return nil
}

// entry copies one entry, found with st, of the directory sfd into dfd.
func (c *copier) entry(sfd, dfd int, rel, name string, st *unix.Stat_t) error {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if err := unix.Mkdirat(dfd, name, 0o700); err != nil {
			return &os.PathError{Op: "mkdir", Path: rel, Err: err}
		}
		sub, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return &os.PathError{Op: "open", Path: rel, Err: err}
		}
		defer unix.Close(sub)
		dsub, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return &os.PathError{Op: "open", Path: rel, Err: err}
		}
		defer unix.Close(dsub)
		if err := c.dir(sub, dsub, rel); err != nil {
			return err
		}
		return c.finish(dsub, rel, st)
	case unix.S_IFLNK:
		target, err := readLink(sfd, name)
		if err != nil {
			return &os.PathError{Op: "readlink", Path: rel, Err: err}
		}
		if err := unix.Symlinkat(target, dfd, name); err != nil {
			return &os.PathError{Op: "symlink", Path: rel, Err: err}
		}
		if c.root {
			_ = unix.Fchownat(dfd, name, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW)
		}
		ts := []unix.Timespec{st.Atim, st.Mtim}
		_ = unix.UtimesNanoAt(dfd, name, ts, unix.AT_SYMLINK_NOFOLLOW)
		return nil
	case unix.S_IFREG:
		return c.file(sfd, dfd, rel, name)
	}
	return nil // a fifo, socket or device: nothing a build or a test reads as a file
}

// file copies the regular file name of sfd into dfd.
func (c *copier) file(sfd, dfd int, rel, name string) error {
	in, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: rel, Err: err}
	}
	inf := os.NewFile(uintptr(in), rel)
	defer inf.Close()
	var st unix.Stat_t
	if err := unix.Fstat(in, &st); err != nil {
		return &os.PathError{Op: "stat", Path: rel, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil // swapped for something else since the directory was read
	}
	out, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &os.PathError{Op: "create", Path: rel, Err: err}
	}
	outf := os.NewFile(uintptr(out), rel)
	defer outf.Close()
	cloned := false
	if c.clone && st.Size > 0 {
		err := unix.IoctlFileClone(out, in)
		cloned = err == nil
		if !cloned && (errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTTY)) {
			c.clone = false
		}
	}
	if !cloned && st.Size > 0 {
		// io.Copy between two files uses copy_file_range, in the kernel.
		if _, err := io.Copy(outf, inf); err != nil {
			return &os.PathError{Op: "copy", Path: rel, Err: err}
		}
	}
	return c.finish(out, rel, &st)
}

// finish gives fd the owner (when the runner may set it), permission bits (without
// set-id bits) and times of st.
func (c *copier) finish(fd int, rel string, st *unix.Stat_t) error {
	if c.root {
		// An owner this namespace cannot map (EINVAL in a user namespace) stays the
		// runner's: the copy matters more than its owner.
		if err := unix.Fchown(fd, int(st.Uid), int(st.Gid)); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EPERM) {
			return &os.PathError{Op: "chown", Path: rel, Err: err}
		}
	}
	if err := unix.Fchmod(fd, st.Mode&0o777); err != nil {
		return &os.PathError{Op: "chmod", Path: rel, Err: err}
	}
	ts := []unix.Timespec{st.Atim, st.Mtim}
	if err := unix.UtimesNanoAt(fd, "", ts, unix.AT_EMPTY_PATH); err != nil {
		// AT_EMPTY_PATH with utimensat needs a recent kernel; futimens does the same.
		if err := unix.Futimes(fd, []unix.Timeval{unix.NsecToTimeval(unix.TimespecToNsec(st.Atim)), unix.NsecToTimeval(unix.TimespecToNsec(st.Mtim))}); err != nil {
			return &os.PathError{Op: "utimes", Path: rel, Err: err}
		}
	}
	return nil
}

// readNames lists the directory fd (without consuming fd), sorted.
func readNames(fd int) ([]string, error) {
	dup, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), ".")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	sort.Strings(names)
	return names, err
}

// readLink reads the target of the link name in the directory dfd.
func readLink(dfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// EnvKey names the Env of a base: its tree id and a digest of the ignored entries of
// the workspace at dir (ignored: slash-separated paths relative to dir, files or
// directories, as `git ls-files --others --ignored --exclude-standard --directory`
// lists them). Each entry is walked without following links; its paths, kinds, modes,
// sizes, modification times and link targets go into the digest, so a reinstalled
// node_modules or a rebuilt cache makes a new Env while tasks on one base with the
// same dependencies share one. The contents of ignored files are not read: a change
// that keeps every size and time is not seen.
func EnvKey(tree, dir string, ignored []string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "tree %s\n", tree)
	sorted := append([]string(nil), ignored...)
	sort.Strings(sorted)
	for _, rel := range sorted {
		rel = path.Clean(filepath.ToSlash(rel))
		if !localPath(rel) {
			return "", models.Errorf(models.EINVALID, "judge: ignored path %q is not below the workspace", rel)
		}
		err := filepath.WalkDir(filepath.Join(dir, filepath.FromSlash(rel)), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			info, err := d.Info()
			if err != nil {
				return nil // vanished since it was listed
			}
			r, _ := filepath.Rel(dir, p)
			fmt.Fprintf(h, "%q %o %d %d", filepath.ToSlash(r), info.Mode(), info.Size(), info.ModTime().UnixNano())
			if info.Mode()&fs.ModeSymlink != 0 {
				t, _ := os.Readlink(p)
				fmt.Fprintf(h, " %q", t)
			}
			h.Write([]byte{'\n'})
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	sum := h.Sum(nil)
	short := tree
	if len(short) > 16 {
		short = short[:16]
	}
	if !envKeyRE.MatchString(short) {
		short = "tree"
	}
	return short + "-" + hex.EncodeToString(sum[:12]), nil
}

// localPath reports whether rel (slash-separated) names a path strictly below the
// root: clean, not absolute, not the root, no ".." element.
func localPath(rel string) bool {
	return rel != "." && rel == path.Clean(rel) && filepath.IsLocal(filepath.FromSlash(rel))
}
