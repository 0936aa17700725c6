package judge

import (
	"errors"
	"io"
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
	stamp   stamp  // the file's identity when it was read (regular files)
}

// stamp identifies a version of a file without reading it: a file whose inode, size,
// and change time (which no process can set) are the same has not been written since
// (git's index works the same way).
type stamp struct {
	Ino   uint64 `json:"ino,omitempty"`
	Size  int64  `json:"size,omitempty"`
	Ctime int64  `json:"ctime,omitempty"` // ns; 0: unknown, always compare contents
}

func stampOf(st *unix.Stat_t) stamp {
	return stamp{Ino: st.Ino, Size: st.Size, Ctime: st.Ctim.Sec*1e9 + st.Ctim.Nsec}
}

type kind uint8

const (
	absent kind = iota
	regular
	symlink
)

// maxFileBytes bounds one protected file the judge reads: test files are small, and a
// worker must not make the runner read a 10 GB "test".
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

// read returns rel's state under rootfd. A directory on the way that is a link, or a
// missing one, makes rel absent: nothing the judge protects is reached through a link.
func read(rootfd int, rel string) (entry, error) {
	dfd, err := openDir(rootfd, path.Dir(rel))
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
			return entry{}, nil
		}
		return entry{}, &os.PathError{Op: "open", Path: path.Dir(rel), Err: err}
	}
	defer unix.Close(dfd)
	name := path.Base(rel)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return entry{}, nil
		}
		return entry{}, &os.PathError{Op: "stat", Path: rel, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		buf := make([]byte, 4096)
		n, err := unix.Readlinkat(dfd, name, buf)
		if err != nil {
			return entry{}, &os.PathError{Op: "readlink", Path: rel, Err: err}
		}
		return entry{kind: symlink, content: buf[:n]}, nil
	case unix.S_IFREG:
	default:
		return entry{}, nil // a directory, fifo or device where a file was: not a file
	}
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return entry{}, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	if err := unix.Fstat(fd, &st); err != nil {
		return entry{}, &os.PathError{Op: "stat", Path: rel, Err: err}
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return entry{}, &os.PathError{Op: "read", Path: rel, Err: err}
	}
	if len(b) > maxFileBytes {
		return entry{}, &os.PathError{Op: "read", Path: rel, Err: errors.New("protected file larger than 16 MiB")}
	}
	return entry{kind: regular, mode: os.FileMode(st.Mode & 0o777), content: b, stamp: stampOf(&st)}, nil
}

// write puts e at rel under rootfd, replacing whatever is there (a file, a link, an
// empty directory), making missing directories; it returns the directories it made,
// outermost first. An absent e removes rel.
func write(rootfd int, rel string, e entry) (made []string, err error) {
	dir := path.Dir(rel)
	dfd, made, err := makeDirs(rootfd, dir)
	if err != nil {
		return made, err
	}
	defer unix.Close(dfd)
	name := path.Base(rel)
	if err := unix.Unlinkat(dfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		if errors.Is(err, unix.EISDIR) {
			err = unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR)
		}
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return made, &os.PathError{Op: "remove", Path: rel, Err: err}
		}
	}
	switch e.kind {
	case absent:
		return made, nil
	case symlink:
		if err := unix.Symlinkat(string(e.content), dfd, name); err != nil {
			return made, &os.PathError{Op: "symlink", Path: rel, Err: err}
		}
		return made, nil
	}
	mode := e.mode
	if mode == 0 {
		mode = 0o644
	}
	fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(mode))
	if err != nil {
		return made, &os.PathError{Op: "create", Path: rel, Err: err}
	}
	f := os.NewFile(uintptr(fd), rel)
	if _, err := f.Write(e.content); err != nil {
		f.Close()
		return made, &os.PathError{Op: "write", Path: rel, Err: err}
	}
	if err := f.Chmod(mode); err != nil { // the umask narrowed the create mode
		f.Close()
		return made, err
	}
	return made, f.Close()
}

// makeDirs opens dir under rootfd, making what is missing of it; a link or a file in
// the way is an error, never followed or replaced.
func makeDirs(rootfd int, dir string) (fd int, made []string, err error) {
	fd, err = unix.Dup(rootfd)
	if err != nil {
		return -1, nil, err
	}
	if dir == "." || dir == "" {
		return fd, nil, nil
	}
	cur := ""
	for _, part := range strings.Split(dir, "/") {
		cur = path.Join(cur, part)
		if err := unix.Mkdirat(fd, part, 0o755); err == nil {
			made = append(made, cur)
		} else if !errors.Is(err, unix.EEXIST) {
			unix.Close(fd)
			return -1, made, &os.PathError{Op: "mkdir", Path: cur, Err: err}
		}
		next, err := unix.Openat2(fd, part, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: beneath})
		unix.Close(fd)
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EXDEV) {
			return -1, made, &BlockedError{Path: cur}
		}
		if err != nil {
			return -1, made, &os.PathError{Op: "open", Path: cur, Err: err}
		}
		fd = next
	}
	return fd, made, nil
}

// removeEmptyDir removes rel under rootfd if it is an empty directory.
func removeEmptyDir(rootfd int, rel string) {
	dfd, err := openDir(rootfd, path.Dir(rel))
	if err != nil {
		return
	}
	defer unix.Close(dfd)
	_ = unix.Unlinkat(dfd, path.Base(rel), unix.AT_REMOVEDIR)
}
