//go:build linux

package procs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ownerLock is a Registry's claim on its records: an exclusive flock on a file of its
// own. The kernel drops the lock when the process dies, however it dies, which is what
// makes "the runner that recorded this is gone" decidable by another process.
type ownerLock struct {
	name string // base name in the registry directory
	f    *os.File
}

// takeOwnerLock creates and locks a new owner file. It is locked under a temporary
// name and renamed into place, so no other registry ever sees it unlocked and
// mistakes its owner for dead.
func takeOwnerLock(dir string) (*ownerLock, error) {
	nonce := make([]byte, 8)
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	name := ownerPrefix + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(nonce) + ownerSuffix
	f, err := os.CreateTemp(dir, tmpPrefix+name+"-*")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*ownerLock, error) {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fail(err)
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		return fail(err)
	}
	return &ownerLock{name: name, f: f}, nil
}

// release deletes the owner file and drops the lock: records of this owner become
// reapable by any registry, as if its process had died.
func (l *ownerLock) release(dir string) error {
	rerr := removeIfExists(filepath.Join(dir, l.name))
	return errors.Join(rerr, l.f.Close())
}

// ownerAlive reports whether the registry named owner still holds its lock. A missing
// file means its owner released it or another reaper found it dead. Anything that
// cannot be decided counts as alive, with the error: sparing a group is recoverable
// (ReapTask still reaps it before its task runs again), killing a live runner's
// worker is not.
func ownerAlive(dir, owner string) (bool, error) {
	if owner == "" || owner != filepath.Base(owner) || !strings.HasPrefix(owner, ownerPrefix) {
		return false, nil // not a name this package writes: nobody can hold it
	}
	f, err := os.Open(filepath.Join(dir, owner))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	defer f.Close() // drops our shared lock, if we got it
	// A shared lock: two reapers may probe the same dead owner at once.
	switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); {
	case err == nil:
		return false, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		return true, nil
	default:
		return true, err
	}
}

// removeDeadOwners deletes the lock files of owners that are gone; their records
// have been dealt with by the caller.
func removeDeadOwners(dir, self string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if name == self || !strings.HasPrefix(name, ownerPrefix) || !strings.HasSuffix(name, ownerSuffix) {
			continue
		}
		alive, err := ownerAlive(dir, name)
		if err == nil && !alive {
			err = removeIfExists(filepath.Join(dir, name))
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// OwnerPath is the absolute path of the registry's owner lock file, locked for as
// long as the registry's process lives: a process on this host that finds it
// unlocked (OwnerDead) knows that this one is gone, however it died.
func (r *Registry) OwnerPath() string {
	p := filepath.Join(r.dir, r.owner.name)
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// OwnerDead reports whether path (an OwnerPath) proves its registry's process gone:
// the file is there and nobody holds its lock. A missing file proves nothing — its
// registry was closed, a reaper removed it after finding it dead, or the path belongs
// to another file system — and neither does an error: both report false.
func OwnerDead(path string) (bool, error) {
	dir, name := filepath.Split(path)
	if !filepath.IsAbs(path) || !strings.HasPrefix(name, ownerPrefix) || !strings.HasSuffix(name, ownerSuffix) {
		return false, nil
	}
	alive, err := ownerAlive(filepath.Clean(dir), name)
	if err != nil {
		return false, err
	}
	// ownerAlive counts a missing file as dead (for a reaper, it is); here only a
	// lock we could take on a file still there proves it, so look again.
	if _, serr := os.Stat(path); serr != nil {
		return false, nil
	}
	return !alive, nil
}

// OwnerDead is the package's OwnerDead, for callers that hold a Registry.
func (r *Registry) OwnerDead(path string) (bool, error) { return OwnerDead(path) }
