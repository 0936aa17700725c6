//go:build !linux

package procs

import (
	"context"
	"log/slog"
)

// Supported reports whether this system has what the Registry needs (/proc, process
// groups, flock). Here it does not: nothing is recorded or reaped, so a worker's
// processes may outlive a runner that dies, and a re-run may overlap them.
const Supported = false

// Registry is a stand-in on systems without /proc: it records and reaps nothing.
type Registry struct {
	// Log is unused here; it exists so that callers compile on every system.
	Log *slog.Logger
}

// Open returns a Registry that records and reaps nothing; it never fails.
func Open(dir string) (*Registry, error) { return &Registry{}, nil }

// Close does nothing.
func (r *Registry) Close() error { return nil }

// Track returns a hook that records nothing and whose done does nothing.
func (r *Registry) Track(taskID int64, attempt int) func(pid int) (done func()) {
	return func(int) func() { return func() {} }
}

// ReapAll reaps nothing: there are no records.
func (r *Registry) ReapAll(ctx context.Context) (reaped int, err error) { return 0, nil }

// ReapTask reaps nothing: there are no records.
func (r *Registry) ReapTask(ctx context.Context, taskID int64) (reaped int, err error) {
	return 0, nil
}

// OwnerPath is empty: there is no owner lock here.
func (r *Registry) OwnerPath() string { return "" }

// OwnerDead proves nothing here: false.
func OwnerDead(path string) (bool, error) { return false, nil }

// OwnerDead proves nothing here: false.
func (r *Registry) OwnerDead(path string) (bool, error) { return false, nil }
