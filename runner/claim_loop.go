package runner

import (
	"context"
	"sync/atomic"

	"github.com/countersign/countersign/runner/startstop"
)

// claimLoop claims ready tasks together with idle agents (claim.go) and hands them to
// the executor: at Start, when a commit may have made work claimable and this runner
// takes the claim turn for it (workWaker; with a store that has no work-ready
// wake-ups, whenever another writer's events commit, publisher), when a task frees
// its agent's slot (notify), and every Poll as a fallback. A claim prepares the
// task's first attempt in its own transaction, through starts.
type claimLoop struct {
	startstop.Base
	*common
	starts  attemptStarter // prepares and begins a claimed task's first attempt
	tmpDirs *tmpDirs       // the attempts' temp dirs, given back when one does not begin
	exec    *executor      // runs what was claimed; what runs is not claimed again
	wake    chan struct{}  // a freed slot; buffered, one pending wake-up is enough
	claims  atomic.Int64   // claim transactions begun, for tests and benchmarks
	// everyCommit wakes the loop on every other writer's commit even when the store
	// has work-ready wake-ups: the behaviour before them, which benchmarks compare.
	everyCommit bool
}

// Start claims until Stop or until ctx ends.
func (p *claimLoop) Start(ctx context.Context) error {
	ctx, ok, started, stopped := p.StartInit(ctx)
	if !ok {
		return nil
	}
	go func() {
		defer stopped()
		started()
		p.loop(ctx)
	}()
	return nil
}

// notify wakes the claim loop (an agent slot was freed).
func (p *claimLoop) notify() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// claimAll claims batches until nothing more can be claimed now: a batch that was
// not full considered every ready task an idle agent could take.
func (p *claimLoop) claimAll(ctx context.Context) {
	for ctx.Err() == nil {
		p.claims.Add(1)
		runs, more, err := p.claim(ctx)
		if err != nil {
			if ctx.Err() == nil {
				p.log.Warn("claim failed; retrying on the next wake-up", "err", err)
			}
			return
		}
		for _, tr := range runs {
			p.exec.launch(tr)
		}
		if len(runs) == 0 || !more {
			return
		}
	}
}
