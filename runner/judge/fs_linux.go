package judge

import (
	"errors"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// entry is one path's state: absent, a regular file with its content and mode, or a
// symbolic link with its target (never followed).
type entry struct {
	kind    kind
	mode    os.FileMode
	content []byte // the file's bytes, or the link's target
}

// kind is what an entry is.
type kind uint8

const (
	absent kind = iota
	regular
	symlink
)

// maxFileBytes bounds a protected file the judge diffs or splits into parts (a larger
// one is protected whole, see judgeLarge): test files are small, and a worker must not
// make the runner diff a 10 GB "test".
const maxFileBytes = 16 << 20

const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openDir opens dir (relative to the root fd, "" for the root itself) as an O_PATH
// directory without following any link or leaving the root.
func openDir(rootfd int, dir string) (int, error) {
	if dir == "" || dir == "." {
		return unix.Dup(rootfd)
	}
	return unix.Openat2(rootfd, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: beneath})
}

// openRoot opens the workspace root. The root itself may be reached through links
// (it was resolved by the workspace manager); nothing below it is.
func openRoot(root string) (int, error) {
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: root, Err: err}
	}
	return fd, nil
}

// write puts e at rel under rootfd, replacing whatever is there (a file, a link, an
// empty directory), making missing directories. An absent e removes rel.
func write(rootfd int, rel string, e entry) error {
	dir := path.Dir(rel)
	dfd, err := makeDirs(rootfd, dir)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	name := path.Base(rel)
	if err := unix.Unlinkat(dfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		if errors.Is(err, unix.EISDIR) {
			err = unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR)
		}
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return &os.PathError{Op: "remove", Path: rel, Err: err}
		}
	}
	switch e.kind {
	case absent:
		return nil
	case symlink:
		if err := unix.Symlinkat(string(e.content), dfd, name); err != nil {
			return &os.PathError{Op: "symlink", Path: rel, Err: err}
		}
		return nil
	}
	mode := e.mode
	if mode == 0 {
		mode = 0o644
	}
	fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(mode))
	if err != nil {
		return &os.PathError{Op: "create", Path: rel, Err: err}
	}
	f := os.NewFile(uintptr(fd), rel)
	if _, err := f.Write(e.content); err != nil {
		f.Close()
		return &os.PathError{Op: "write", Path: rel, Err: err}
	}
	if err := f.Chmod(mode); err != nil { // the umask narrowed the create mode
		f.Close()
		return err
	}
	return f.Close()
}

// makeDirs opens dir under rootfd, making what is missing of it; a link or a file in
// the way is an error, never followed or replaced.
func makeDirs(rootfd int, dir string) (fd int, err error) {
	fd, err = unix.Dup(rootfd)
	if err != nil {
		return -1, err
	}
	if dir == "." || dir == "" {
		return fd, nil
	}
	cur := ""
	for _, part := range strings.Split(dir, "/") {
		cur = path.Join(cur, part)
		if err := unix.Mkdirat(fd, part, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			unix.Close(fd)
			return -1, &os.PathError{Op: "mkdir", Path: cur, Err: err}
		}
		next, err := unix.Openat2(fd, part, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: beneath})
		unix.Close(fd)
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EXDEV) {
			return -1, &BlockedError{Path: cur}
		}
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: cur, Err: err}
		}
		fd = next
	}
	return fd, nil
}
