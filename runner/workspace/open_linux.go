//go:build linux

package workspace

import (
	"os"

	"golang.org/x/sys/unix"
)

// OpenRegularBeneath opens rel below dir for reading only if it is a regular file,
// refusing any symbolic link on the way and any step out of dir (openat2
// RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): the kernel decides at the moment of opening,
// so a worker's process that swaps the path for a link after it was checked gains
// nothing. O_NONBLOCK keeps a FIFO swapped in from blocking the runner until someone
// writes to it; whatever was opened that is not a regular file is closed and refused
// with ErrNotRegular.
func OpenRegularBeneath(dir, rel string) (*os.File, error) {
	dirfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(dirfd)
	fd, err := unix.Openat2(dirfd, rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: rel, Err: ErrNotRegular}
	}
	return os.NewFile(uintptr(fd), rel), nil
}
