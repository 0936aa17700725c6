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

// heartbeat renews the leases of the running tasks every Lease/3, so that two
// renewals can fail before a lease expires, and cancels the tasks whose lease was
// lost. It runs from before the first task until after the last one ended.
type heartbeat struct {
	loop.Loop
	cfg     Config
	claimer models.Claimer
	log     *slog.Logger
	exec    *executor // the tasks whose leases it renews
}

// Start renews leases until Stop; cancelling ctx does not stop it (tasks outlive ctx).
func (p *heartbeat) Start(ctx context.Context) error {
	return p.Loop.Start(context.WithoutCancel(ctx), max(p.cfg.Lease/3, 10*time.Millisecond), false, p.renew)
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
