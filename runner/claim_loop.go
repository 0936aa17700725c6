package runner

import (
	"context"
	"sync/atomic"
	"time"

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

// workWaker is what a store offers for wake-ups that do not stampede (store.DB):
// a signal when a commit may have made work claimable, heard by every runner, and a
// turn that lets only one of them claim for it.
type workWaker interface {
	SubscribeWork(ctx context.Context) <-chan int64
	ClaimTurn(ctx context.Context) (release func(), ok bool, err error)
}

// claimTurnHold is how long a runner keeps the claim turn at least: a wake-up reaches
// the runners at slightly different times, and a runner that hears it late must still
// find the turn taken, not claim a second time for it. Wake-ups that arrive while the
// turn is held are the holder's to claim for.
const claimTurnHold = 50 * time.Millisecond

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

// loop claims until ctx ends, waking on work-ready signals when it takes the claim
// turn (or, without them, on other writers' events), on freed slots and on the poll
// tick.
func (p *claimLoop) loop(ctx context.Context) {
	tick := time.NewTicker(p.cfg.Poll)
	defer tick.Stop()
	ww, _ := p.store.(workWaker)
	var work <-chan int64
	foreign := p.events.foreign
	if ww != nil && !p.everyCommit {
		work, foreign = ww.SubscribeWork(ctx), nil
	}
	p.claimAll(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-work:
			if !ok {
				work, foreign = nil, p.events.foreign // the store closed: follow commits
				continue
			}
			p.takeTurn(ctx, ww, work)
		case <-foreign:
			p.claimAll(ctx)
		case <-p.wake:
			p.claimAll(ctx)
		case <-tick.C:
			p.claimAll(ctx)
		}
	}
}

// takeTurn claims for a work-ready wake-up if this runner takes the claim turn, and
// for every wake-up that arrives while it holds it; another runner holding the turn
// claims for this one. A wake-up heard just as the turn is let go may have been
// dropped by runners that saw it held: the holder, who heard it too, takes the turn
// again for it. A turn that cannot be asked for (the database) is claimed for anyway.
func (p *claimLoop) takeTurn(ctx context.Context, ww workWaker, work <-chan int64) {
	for ctx.Err() == nil {
		release, ok, err := ww.ClaimTurn(ctx)
		if err != nil {
			if ctx.Err() == nil {
				p.log.Warn("claim turn unavailable; claiming anyway", "err", err)
			}
			p.claimAll(ctx)
			return
		}
		if !ok {
			return
		}
		hold := time.NewTimer(claimTurnHold)
		for held := true; held; {
			p.claimAll(ctx)
			select {
			case _, open := <-work:
				held = open
			case <-hold.C:
				held = false
			case <-ctx.Done():
				held = false
			}
		}
		hold.Stop()
		release()
		select {
		case _, open := <-work:
			if !open {
				return
			}
		default:
			return
		}
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
