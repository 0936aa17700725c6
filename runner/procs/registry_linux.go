//go:build linux

package procs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/countersign/countersign/runner/internal/spares"
)

// Supported reports whether this system has what the Registry needs (/proc, process
// groups, flock): on Linux it does, and groups are recorded and reaped.
const Supported = true

// pollInterval is how often a reaper looks again whether the groups it killed are
// gone. SIGKILL takes effect within microseconds unless a process is stuck in the
// kernel, so a short interval keeps a runner's start quick.
const pollInterval = 15 * time.Millisecond

// Registry records, in files under one directory of the runner's data dir, the
// process groups that this host's runners started for attempts, so that a runner that
// was killed can have them reaped by the next one. Its methods are safe for
// concurrent use, and several registries (in one process or many) may share the
// directory on one host. See the package documentation for how a record is judged.
type Registry struct {
	// Log receives what cannot be returned: a group that could not be recorded (and so
	// would survive this runner's death) or a record that could not be removed.
	// slog.Default() when nil. Set it before the Registry is used.
	Log *slog.Logger

	dir   string
	host  string
	boot  string
	owner *ownerLock

	closeOnce sync.Once
	closeErr  error

	// spares are finished records' files, kept to be overwritten by the next record
	// (see package spares). Their names start with tmpPrefix: a runner that dies
	// leaves them to removeStaleTemps.
	spares spares.Stack
}

// Open returns the registry kept in dir, creating the directory (mode 0700) if needed,
// and takes this registry's owner lock, which it holds until Close or the death of
// the process. Open reaps nothing: call ReapAll for that.
func Open(dir string) (*Registry, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("procs: %w", err)
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("procs: host name: %w", err)
	}
	boot, err := readBootID()
	if err != nil {
		return nil, fmt.Errorf("procs: boot id: %w", err)
	}
	owner, err := takeOwnerLock(dir)
	if err != nil {
		return nil, fmt.Errorf("procs: owner lock: %w", err)
	}
	return &Registry{dir: dir, host: host, boot: boot, owner: owner,
		spares: spares.Stack{Dir: dir, Prefix: tmpPrefix + "spare-" + owner.name + "-", Max: 64}}, nil
}

// Close releases the registry's owner lock without touching its records: groups it
// tracked whose done was not called become reapable by ReapAll of any registry, as if
// this process had died. Track must not be called after Close. Close is idempotent.
func (r *Registry) Close() error {
	r.closeOnce.Do(func() { r.closeErr = r.owner.release(r.dir) })
	return r.closeErr
}

func (r *Registry) log() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.Default()
}

// Track returns the hook the runner hands to worker.Spec.OnStart for one run of
// taskID's attempt. Called with the pid of the started group leader (whose process
// group id must equal its pid, or nothing is recorded: reaping the group of a process
// that is not its leader could kill the runner's own group), it records the group
// under this host, boot, group id, session and the leader's start time, with the task
// and attempt, and returns done. Call the hook while the leader is not yet reaped, so
// that its pid still names it.
//
// done removes the record once the group is gone; call it after the run has killed and
// reaped its group. It waits a moment (releaseWait) for members that were just sent
// SIGKILL; if processes of the group still live after that, the record stays for the
// next ReapTask or ReapAll. A record that cannot be written is logged, never returned:
// the run goes on, unprotected against this runner's death, rather than fail.
func (r *Registry) Track(taskID int64, attempt int) func(pid int) (done func()) {
	return func(pid int) func() {
		rec, err := r.record(taskID, attempt, pid)
		if err != nil {
			r.log().Error("procs: cannot record a worker's process group; it will outlive this runner if it dies",
				"task", taskID, "attempt", attempt, "pid", pid, "err", err)
			return func() {}
		}
		var once sync.Once
		return func() { once.Do(func() { r.release(rec) }) }
	}
}

// record writes the record of pid's group and returns it with its path.
func (r *Registry) record(taskID int64, attempt, pid int) (storedRecord, error) {
	p, err := readStat(pid)
	if err != nil {
		return storedRecord{}, err
	}
	if p.pgid != pid {
		return storedRecord{}, fmt.Errorf("process %d is not the leader of its group %d", pid, p.pgid)
	}
	rec := record{Host: r.host, BootID: r.boot, PID: pid, PGID: p.pgid, SID: p.sid, StartTicks: p.start,
		TaskID: taskID, Attempt: attempt, Owner: r.owner.name, Recorded: time.Now().UTC()}
	b, err := json.Marshal(rec)
	if err != nil {
		return storedRecord{}, err
	}
	name := rec.fileName()
	if err := r.writeRecord(name, b); err != nil {
		return storedRecord{}, err
	}
	return storedRecord{rec, filepath.Join(r.dir, name)}, nil
}

// releaseWait bounds how long done waits for a group that was just sent SIGKILL: its
// members may still be on their way out when the run reaps the leader.
const releaseWait = 200 * time.Millisecond

// release removes rec's file once no process of its group lives, waiting up to
// releaseWait for that; a group still alive then keeps its record for the next reap.
func (r *Registry) release(rec storedRecord) {
	if !groupMayLive(rec.PGID) { // the usual case, without a scan of /proc
		r.remove(rec)
		return
	}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	timeout := time.NewTimer(releaseWait)
	defer timeout.Stop()
	for {
		s, err := scan()
		if err == nil && len(members(rec.record, s)) == 0 {
			r.remove(rec)
			return
		}
		select {
		case <-timeout.C:
			r.log().Warn("procs: a finished run's process group still lives; keeping its record for the next reap",
				"task", rec.TaskID, "attempt", rec.Attempt, "pgid", rec.PGID, "err", err)
			return
		case <-tick.C:
		}
	}
}

func (r *Registry) remove(rec storedRecord) {
	if r.spares.Keep(rec.path) {
		return
	}
	if err := removeIfExists(rec.path); err != nil {
		r.log().Error("procs: removing a finished run's record", "path", rec.path, "err", err)
	}
}

// groupMayLive is a cheap first look: signal 0 to the group reaches no process but
// fails with ESRCH when the group has none, which is the usual case once a run is over.
func groupMayLive(pgid int) bool {
	return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

// ReapAll kills (SIGKILL to the group and to each member) every recorded group of this
// host and boot that is still alive and whose owner registry is gone — the runner that
// started it died or closed its registry —, waits until no process of it is left
// (bounded by ctx), then deletes its record. Records of other boots and of groups
// already gone are deleted; records of other hosts and of live owners are left alone.
// reaped counts the groups found alive and now gone. Call it once when a runner
// starts, before it claims anything.
//
// On error (ctx done, a process that may not be signalled, an unreadable directory)
// the records of groups that may still live are kept, so a later call tries again.
func (r *Registry) ReapAll(ctx context.Context) (reaped int, err error) {
	reaped, err = r.reap(ctx, recordPrefix, true)
	// Leftovers of dead runners, tidied now that their records are dealt with.
	tidy := errors.Join(removeStaleTemps(r.dir, time.Now()), removeDeadOwners(r.dir, r.owner.name))
	if tidy != nil {
		err = errors.Join(err, fmt.Errorf("procs: %w", tidy))
	}
	return reaped, err
}

// ReapTask does what ReapAll does for the records of taskID only, whoever their owner:
// a new attempt must not overlap an earlier one even when the runner that started the
// earlier one still lives (it lost the task's lease). Call it before a new attempt of
// the task starts, and start none if it fails.
func (r *Registry) ReapTask(ctx context.Context, taskID int64) (reaped int, err error) {
	return r.reap(ctx, taskPrefix(taskID), false)
}

// reap judges the records whose file names start with prefix and kills the groups
// that are ours and alive. With spareLiveOwners, groups whose owner still holds its
// lock are left alone.
func (r *Registry) reap(ctx context.Context, prefix string, spareLiveOwners bool) (int, error) {
	recs, bad, err := listRecords(r.dir, prefix)
	if err != nil {
		return 0, fmt.Errorf("procs: %w", err)
	}
	if len(recs) == 0 && len(bad) == 0 {
		// Nothing recorded, nothing to judge: reading every process's stat (a file per
		// process on the host) is the cost of an attempt's start otherwise.
		return 0, nil
	}
	var errs []error
	for _, path := range bad {
		r.log().Warn("procs: deleting an unreadable record", "path", path)
		errs = append(errs, removeIfExists(path))
	}
	s, err := scan()
	if err != nil {
		return 0, fmt.Errorf("procs: %w", errors.Join(append(errs, err)...))
	}
	alive := map[string]bool{} // owner → holds its lock, probed once per owner
	var targets []storedRecord
	for _, rec := range recs {
		switch r.judge(rec.record, s) {
		case leave:
		case stale:
			errs = append(errs, removeIfExists(rec.path))
		case kill:
			if spareLiveOwners && r.ownerAlive(rec.Owner, alive, &errs) {
				continue
			}
			targets = append(targets, rec)
		}
	}
	gone, err := killUntilGone(ctx, targets, s)
	errs = append(errs, err)
	for _, rec := range gone {
		errs = append(errs, removeIfExists(rec.path))
	}
	if err := errors.Join(errs...); err != nil {
		return len(gone), fmt.Errorf("procs: %w", err)
	}
	return len(gone), nil
}

// ownerAlive probes owner's lock once per reap; our own registry is alive by
// definition.
func (r *Registry) ownerAlive(owner string, cache map[string]bool, errs *[]error) bool {
	if owner == r.owner.name {
		return true
	}
	if v, ok := cache[owner]; ok {
		return v
	}
	v, err := ownerAlive(r.dir, owner)
	*errs = append(*errs, err)
	cache[owner] = v
	return v
}

// verdict is what a reaper does with one record.
type verdict int

const (
	leave verdict = iota // not ours to judge: another host
	stale                // nothing of the group is left (or the pid is another's): delete the record
	kill                 // the group is ours and alive
)

// judge applies the identity rules of the package documentation to rec.
func (r *Registry) judge(rec record, s snapshot) verdict {
	switch {
	case rec.Host != r.host:
		return leave
	case rec.BootID != r.boot:
		return stale
	case len(members(rec, s)) > 0:
		return kill
	default:
		return stale
	}
}

// members returns the live processes of rec's group in s: none when the group is
// gone or when its leader's pid now names a process that started at another time
// (the pid was reused, so the group id is not ours any more). The leader counts even
// when it moved to another group: its pid and start time prove it ours.
func members(rec record, s snapshot) []procStat {
	leader, hasLeader := s.byPID[rec.PGID]
	if hasLeader && leader.start != rec.StartTicks {
		return nil
	}
	var live []procStat
	for _, p := range s.byPGID[rec.PGID] {
		// Every process of a group shares its session; another session means the
		// group id was taken anew after the whole group had died.
		if !p.dead() && p.sid == rec.SID {
			live = append(live, p)
		}
	}
	if hasLeader && !leader.dead() && leader.pgid != rec.PGID {
		live = append(live, leader)
	}
	return live
}

// killUntilGone sends SIGKILL to every target group and its members, again each
// pollInterval for as long as any of them lives, until all are gone or ctx is done.
// It returns the targets that are gone; one whose processes may not be signalled is
// given up (its record stays) and reported.
func killUntilGone(ctx context.Context, targets []storedRecord, s snapshot) (gone []storedRecord, err error) {
	if len(targets) == 0 {
		return nil, nil
	}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var errs []error
	for pending := targets; ; {
		var still []storedRecord
		for _, t := range pending {
			live := members(t.record, s)
			if len(live) == 0 {
				gone = append(gone, t)
				continue
			}
			if err := killGroup(t.PGID, live); err != nil {
				errs = append(errs, fmt.Errorf("killing process group %d of task %d: %w", t.PGID, t.TaskID, err))
				continue
			}
			still = append(still, t)
		}
		if len(still) == 0 {
			return gone, errors.Join(errs...)
		}
		pending = still
		select {
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("%d process group(s) still alive: %w", len(pending), ctx.Err()))
			return gone, errors.Join(errs...)
		case <-tick.C:
		}
		if s, err = scan(); err != nil {
			return gone, errors.Join(append(errs, err)...)
		}
	}
}

// killGroup sends SIGKILL to the group and to each of its live members: a member
// that the group signal missed (it moved to another group meanwhile) still dies.
// ESRCH means it died already. Only a refusal (EPERM) is an error.
func killGroup(pgid int, live []procStat) error {
	errs := []error{ignoreESRCH(syscall.Kill(-pgid, syscall.SIGKILL))}
	for _, p := range live {
		errs = append(errs, ignoreESRCH(syscall.Kill(p.pid, syscall.SIGKILL)))
	}
	return errors.Join(errs...)
}

func ignoreESRCH(err error) error {
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// writeRecord publishes data as r.dir/name as writeAtomic does, overwriting a spare
// instead of creating a file when there is one.
func (r *Registry) writeRecord(name string, data []byte) error {
	if spare := r.spares.Take(); spare != "" {
		err := os.WriteFile(spare, data, 0o600) // truncates: the file is ours and a regular one
		if err == nil {
			if err = os.Rename(spare, filepath.Join(r.dir, name)); err == nil {
				return nil
			}
		}
		os.Remove(spare)
	}
	return writeAtomic(r.dir, name, data)
}
