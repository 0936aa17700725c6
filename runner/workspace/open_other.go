//go:build !linux

package workspace

import (
	"os"
	"path/filepath"
	"syscall"
)

// openBeneath opens rel below dir without following a link at its last step; without
// openat2 a link higher up is caught only by Resolve, before.
func openBeneath(dir, rel string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, rel), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
}
