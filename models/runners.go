package models

import (
	"context"
	"time"
)

// RunnerInstance is one process of a runner id, as its heartbeat last wrote it. A
// runner id names leases (Task.LeaseOwner); each process that runs under it is an
// instance of its own, so that a process restarted under the same id can tell its
// dead predecessor from a live process that was (wrongly) given the same id.
type RunnerInstance struct {
	RunnerID string
	// Instance is a random token the process drew at its start.
	Instance string
	// Host is the host name the process runs on.
	Host string
	// Owner is the absolute path of the process's runner/procs owner lock file, held
	// for as long as the process lives; "" when it has none. Only a process on the
	// same Host may probe it.
	Owner string
	// AliveUntil is when the instance counts as silent unless it beats again: its
	// last heartbeat plus a few heartbeat intervals.
	AliveUntil time.Time
	StartedAt  time.Time
}

// RunnerRegistry is the part of a store that keeps runners' heartbeats, so that a
// runner that fell silent has its leases ended before they expire. The gorm store's
// DB implements it. Times are the callers' clocks, as for leases: hosts that share a
// database must agree on the time to well within a heartbeat's silence.
type RunnerRegistry interface {
	// BeatRunner records inst (inserting or updating its row): it is alive until
	// inst.AliveUntil.
	BeatRunner(ctx context.Context, inst RunnerInstance) error
	// RunnerInstances returns the recorded instances of runnerID, oldest first.
	RunnerInstances(ctx context.Context, runnerID string) ([]RunnerInstance, error)
	// ForgetRunnerInstances deletes the rows of runnerID's instances named, and of
	// every runner silent since before silentBefore (zero: none of those).
	ForgetRunnerInstances(ctx context.Context, runnerID string, instances []string, silentBefore time.Time) error
	// ExpireOwnLeases ends, as of now, the leases owner holds on tasks in progress
	// whose lease_until is not after notAfter, except the tasks in keep, and returns
	// how many it ended. notAfter lets a restarted runner end its dead predecessor's
	// leases without touching ones a live process of the same id took since.
	ExpireOwnLeases(ctx context.Context, owner string, notAfter, now time.Time, keep []int64) (int64, error)
	// ExpireSilentLeases ends, as of now, every live lease whose owner has recorded
	// instances and all of them silent (AliveUntil before now), and returns how many
	// it ended. Owners without any recorded instance keep their leases until they
	// expire.
	ExpireSilentLeases(ctx context.Context, now time.Time) (int64, error)
}
