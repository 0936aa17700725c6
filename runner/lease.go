package runner

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/internal/loop"
)

// heartbeat beats every beatInterval (Lease/3, at most a second): it records this
// runner alive (presence), ends the leases of runners fallen silent so that their
// tasks are taken over at once (takeover.go), and every Lease/3 renews the leases of
// the running tasks, so that two renewals can fail before a lease expires, cancelling
// the tasks whose lease was lost. It runs from before the first task until after the
// last one ended.
type heartbeat struct {
	loop.Loop
	cfg     Config
	claimer models.Claimer
	log     *slog.Logger
	exec    *executor // the tasks whose leases it renews
	pres    *presence
	wake    func() // wakes the claim loop: leases were ended, their tasks are ready
	ticks   int    // beats so far; touched only by the loop's goroutine
}

// Start beats until Stop; cancelling ctx does not stop it (tasks outlive ctx).
func (p *heartbeat) Start(ctx context.Context) error {
	return p.Loop.Start(context.WithoutCancel(ctx), beatInterval(p.cfg.Lease), false, p.tick)
}

// Stop stops beating and marks this runner silent, so that leases it could not
// release are ended at other runners' next beat.
func (p *heartbeat) Stop(ctx context.Context) error {
	err := p.Loop.Stop(ctx)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	p.pres.silence(sctx)
	return err
}

// renewEvery is how many beats pass between lease renewals: a renewal every Lease/3
// whatever the beat, so that a short beat does not rewrite every running task's row
// every second.
func (p *heartbeat) renewEvery() int {
	return max(int((p.cfg.Lease/3)/beatInterval(p.cfg.Lease)), 1)
}

// tick is one beat: presence, silent runners' leases, and every renewEvery beats the
// running tasks' leases.
func (p *heartbeat) tick(ctx context.Context) {
	p.ticks++
	if p.pres.reg != nil {
		p.beatOnce(ctx)
	}
	if p.ticks%p.renewEvery() == 0 {
		p.renew(ctx)
	}
}

// beatOnce records this runner alive, takes back its dead predecessor's leases once
// they are proven dead, and ends silent runners' leases; ended leases wake the claim.
func (p *heartbeat) beatOnce(ctx context.Context) {
	bctx, cancel := context.WithTimeout(ctx, max(beatInterval(p.cfg.Lease), time.Second))
	defer cancel()
	now := time.Now()
	if err := p.pres.beat(bctx, now); err != nil {
		if ctx.Err() == nil {
			p.log.Warn("heartbeat failed", "err", err)
		}
		return
	}
	own, err := p.pres.reclaim(bctx, now, p.exec.runningIDs())
	if err != nil && ctx.Err() == nil {
		p.log.Warn("taking back this runner id's leases failed", "err", err)
	}
	silent, err := p.pres.reg.ExpireSilentLeases(bctx, now)
	if err != nil && ctx.Err() == nil {
		p.log.Warn("ending silent runners' leases failed", "err", err)
	}
	if silent > 0 {
		p.log.Info("ended the leases of silent runners", "tasks", silent)
	}
	if own+silent > 0 && p.wake != nil {
		p.wake()
	}
}

// renew extends this runner's leases once and cancels the tasks it no longer holds.
func (p *heartbeat) renew(ctx context.Context) {
	ids := p.exec.runningIDs()
	if len(ids) == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, max(p.cfg.Lease/3, time.Second))
	defer cancel()
	kept, err := p.claimer.RenewLeases(rctx, p.cfg.RunnerID, ids, time.Now().Add(p.cfg.Lease))
	if err != nil {
		// Not a loss: the database may be back before the lease runs out. If it is
		// not, another runner takes over and the next renewal reports the loss.
		if ctx.Err() == nil {
			p.log.Warn("lease renewal failed", "err", err)
		}
		return
	}
	for _, id := range ids {
		if slices.Contains(kept, id) {
			continue
		}
		tr := p.exec.get(id)
		if tr != nil && !tr.settling() {
			p.log.Warn("lease lost: stopping the task's worker", "task_id", id)
			tr.cancel(ErrLeaseLost)
		}
	}
}

// releaseLease gives up the lease of a task this runner will not continue (stopping,
// or a result that could not be recorded), so another runner may take it at once.
func (p *common) releaseLease(tr *taskRun) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.claimer.ReleaseLease(ctx, p.cfg.RunnerID, tr.task.ID); err != nil {
		p.log.Warn("releasing lease failed; it will expire", "task_id", tr.task.ID, "err", err)
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
