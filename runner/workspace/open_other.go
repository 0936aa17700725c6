//go:build !linux

package workspace

import (
	"os"
	"path/filepath"
	"syscall"
)

// OpenRegularBeneath opens rel below dir without following a link at its last step,
// only if it is a regular file (ErrNotRegular otherwise); without openat2 a link
// higher up is caught only by Resolve, before.
func OpenRegularBeneath(dir, rel string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, rel), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: rel, Err: ErrNotRegular}
	}
	return f, nil
}
