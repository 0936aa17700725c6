package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/countersign/countersign/models"
)

// Fast takeover. A lease alone hands a dead runner's tasks on only once it expires
// (Lease, 30 s by default). Two things make it quicker, both through the store's
// runners table (models.RunnerRegistry), one row per process of a runner id:
//
//   - Every runner beats every beatInterval (at most a second), writing alive_until =
//     now + silentBeats intervals, and at each beat ends the leases of every runner id
//     whose instances are all silent (ExpireSilentLeases). Ending the lease is all a
//     takeover needs: the claim then takes the task as it takes an expired one,
//     recording the dead attempt as an infrastructure failure.
//   - A runner restarted under the same id ends its own leases before its first
//     claim when it can prove every earlier instance of the id dead: silent, or on
//     this host with its runner/procs owner lock file unlocked (the kernel drops the
//     lock when the process dies). That proof is taken before ReapAll (which tidies
//     dead owners' files away); the leases are ended after ReapAll has killed what
//     the dead instance left running.
//
// Two live processes given the same runner id (a misconfiguration) never steal from
// each other: the live one beats, so the id is never silent, and its owner lock is
// held, so a restart beside it proves nothing; the newcomer looks again at each beat
// and otherwise leaves the leases to expire. A lease the live one took after the
// newcomer started is never ended by it either (ExpireOwnLeases' notAfter).

// silentBeats is how many heartbeat intervals without a beat make a runner silent.
// Three lets two beats be lost (a slow statement, a short network cut) first.
const silentBeats = 3

// maxBeat bounds the heartbeat interval whatever the lease: silence is noticed
// within silentBeats of it (3 s), while leases stay long enough to ride out a
// database that is away for a while.
const maxBeat = time.Second

// forgetSilent is how long the rows of silent runners are kept before a starting
// runner deletes them: runner ids drawn per process (host-pid) would pile up.
const forgetSilent = 24 * time.Hour

// beatInterval is how often a runner with lease beats: Lease/3 (two renewals may
// fail before the lease ends), at most maxBeat, at least 10 ms.
func beatInterval(lease time.Duration) time.Duration {
	return max(min(lease/3, maxBeat), 10*time.Millisecond)
}

// ownerProber is what a ProcessTracker offers, on hosts where it can, to prove a
// process dead (runner/procs.Registry does on Linux).
type ownerProber interface {
	OwnerPath() string
	OwnerDead(path string) (bool, error)
}

// presence is this process's row in the runners table and the reclaim of its dead
// predecessors' leases.
type presence struct {
	cfg   Config
	reg   models.RunnerRegistry // nil: the store keeps no heartbeats
	log   *slog.Logger
	inst  models.RunnerInstance
	owner ownerProber // nil: nothing proves a predecessor on this host dead

	mu sync.Mutex
	// pending are the earlier instances of the id not yet proven dead; one proven
	// dead by its owner lock has a zero AliveUntil.
	pending []models.RunnerInstance
	// sweepUntil is when the reclaim stops looking again: a claim or a renewal the
	// dead process sent just before it died can commit after the first reclaim (its
	// backend may run late on a busy machine), so each beat ends such leases until
	// the dead process's last one would have expired anyway.
	sweepUntil time.Time
}

func newPresence(cfg Config, store models.Store, log *slog.Logger) *presence {
	p := &presence{cfg: cfg, log: log}
	p.reg, _ = store.(models.RunnerRegistry)
	p.owner, _ = cfg.Procs.(ownerProber)
	host, _ := os.Hostname()
	token := make([]byte, 8)
	_, _ = rand.Read(token)
	p.inst = models.RunnerInstance{RunnerID: cfg.RunnerID, Instance: hex.EncodeToString(token), Host: host}
	if p.owner != nil {
		p.inst.Owner = p.owner.OwnerPath()
	}
	return p
}

// judge lists the earlier instances of this runner id and looks at their owner
// locks now, while the files are there: call it before procs' ReapAll, which
// removes dead owners' files.
func (p *presence) judge(ctx context.Context) error {
	if p.reg == nil {
		return nil
	}
	now := time.Now()
	p.inst.StartedAt = now
	insts, err := p.reg.RunnerInstances(ctx, p.cfg.RunnerID)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending = nil
	for _, in := range insts {
		if in.Instance == p.inst.Instance {
			continue
		}
		if p.dead(in, now) {
			in.AliveUntil = time.Time{}
		} else {
			p.log.Warn("another process with this runner id seems alive: its leases are left to it (a runner id must be unique per process)",
				"instance", in.Instance, "host", in.Host)
		}
		p.pending = append(p.pending, in)
	}
	return nil
}

// start beats for the first time, forgets long-silent runners and, when every
// earlier instance of the id is dead, ends their leases: call it after ReapAll and
// before the first claim.
func (p *presence) start(ctx context.Context) error {
	if p.reg == nil {
		return nil
	}
	now := time.Now()
	if err := p.reg.ForgetRunnerInstances(ctx, p.cfg.RunnerID, nil, now.Add(-forgetSilent)); err != nil {
		return err
	}
	if err := p.beat(ctx, now); err != nil {
		return err
	}
	_, err := p.reclaim(ctx, now, nil)
	return err
}

// beat records that this instance is alive for silentBeats more intervals.
func (p *presence) beat(ctx context.Context, now time.Time) error {
	in := p.inst
	in.AliveUntil = now.Add(silentBeats * beatInterval(p.cfg.Lease))
	return p.reg.BeatRunner(ctx, in)
}

// reclaim ends this id's leases (but those of keep, the tasks it runs) once every
// pending earlier instance is proven dead, and forgets those instances. It reports
// how many leases it ended.
func (p *presence) reclaim(ctx context.Context, now time.Time, keep []int64) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.pending) == 0 {
		if now.Before(p.sweepUntil) {
			return p.expireOwn(ctx, now, keep)
		}
		return 0, nil
	}
	if err := p.refreshPending(ctx); err != nil {
		return 0, err
	}
	var gone []string
	for _, in := range p.pending {
		// Only silence is looked at again: a lock held at the first look may be
		// released by a Close, which proves nothing.
		if !in.AliveUntil.Before(now) {
			return 0, nil
		}
		gone = append(gone, in.Instance)
	}
	n, err := p.expireOwn(ctx, now, keep)
	if err != nil {
		return 0, err
	}
	if err := p.reg.ForgetRunnerInstances(ctx, p.cfg.RunnerID, gone, time.Time{}); err != nil {
		return n, err
	}
	p.pending = nil
	p.sweepUntil = p.inst.StartedAt.Add(p.cfg.Lease)
	return n, nil
}

// expireOwn ends the id's leases that the dead processes took (but those of keep).
// Leases this process took end after StartedAt+Lease; the dead ones' were taken or
// renewed before it started, so they end before.
func (p *presence) expireOwn(ctx context.Context, now time.Time, keep []int64) (int64, error) {
	n, err := p.reg.ExpireOwnLeases(ctx, p.cfg.RunnerID, p.inst.StartedAt.Add(p.cfg.Lease), now, keep)
	if err == nil && n > 0 {
		p.log.Info("took back the leases of this runner id's dead process", "tasks", n)
	}
	return n, err
}

// refreshPending rereads the id's other instances when one pending still looked
// alive: their beats since, and instances started since. Those proven dead by their
// lock stay so (a zero AliveUntil).
func (p *presence) refreshPending(ctx context.Context) error {
	proven := map[string]bool{}
	for _, in := range p.pending {
		if in.AliveUntil.IsZero() {
			proven[in.Instance] = true
		}
	}
	if len(proven) == len(p.pending) {
		return nil
	}
	insts, err := p.reg.RunnerInstances(ctx, p.cfg.RunnerID)
	if err != nil {
		return err
	}
	p.pending = p.pending[:0]
	for _, in := range insts {
		if in.Instance == p.inst.Instance {
			continue
		}
		if proven[in.Instance] {
			in.AliveUntil = time.Time{}
		}
		p.pending = append(p.pending, in)
	}
	return nil
}

// dead reports whether in is proven gone: silent, or on this host with its owner
// lock file unlocked.
func (p *presence) dead(in models.RunnerInstance, now time.Time) bool {
	if in.AliveUntil.Before(now) {
		return true
	}
	if p.owner == nil || in.Owner == "" || in.Host != p.inst.Host {
		return false
	}
	dead, err := p.owner.OwnerDead(in.Owner)
	if err != nil {
		p.log.Warn("cannot tell whether an earlier process of this runner id is alive", "instance", in.Instance, "err", err)
	}
	return dead
}

// silence marks this instance silent at once (a graceful stop): other runners may
// end whatever leases it still holds at their next beat.
func (p *presence) silence(ctx context.Context) {
	if p.reg == nil {
		return
	}
	in := p.inst
	in.AliveUntil = time.Now()
	if err := p.reg.BeatRunner(ctx, in); err != nil {
		p.log.Warn("marking the runner stopped failed; it falls silent on its own", "err", err)
	}
}
