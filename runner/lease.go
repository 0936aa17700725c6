package runner

import (
	"context"
	"encoding/json"
	"slices"
	"time"
)

// heartbeat renews the leases of the running tasks every Lease/3, so that two renewals
// can fail before a lease expires, and cancels the tasks whose lease was lost.
func (p *Pool) heartbeat(ctx context.Context) {
	t := time.NewTicker(max(p.cfg.Lease/3, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.renew(ctx)
		}
	}
}

// renew extends this runner's leases once and cancels the tasks it no longer holds.
func (p *Pool) renew(ctx context.Context) {
	ids := p.runningIDs()
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
		p.mu.Lock()
		tr := p.running[id]
		p.mu.Unlock()
		if tr != nil && !tr.settling() {
			p.log.Warn("lease lost: stopping the task's worker", "task_id", id)
			tr.cancel(ErrLeaseLost)
		}
	}
}

// releaseLease gives up the lease of a task this runner will not continue (stopping,
// or a result that could not be recorded), so another runner may take it at once.
func (p *Pool) releaseLease(tr *taskRun) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.claimer.ReleaseLease(ctx, p.cfg.RunnerID, tr.task.ID); err != nil {
		p.log.Warn("releasing lease failed; it will expire", "task_id", tr.task.ID, "err", err)
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
