package runner

import (
	"context"
	"time"
)

// Wake-ups that do not stampede. Every runner hears each work-ready signal (a commit
// that may have made work claimable, models/store/workready.go), but only the one
// that takes the claim turn claims for it: agents' concurrency is counted in the
// database, so that runner claims everything there is to claim, and the others would
// find nothing. While it holds the turn (at least claimTurnHold) it claims again for
// every signal it hears; the others, having found the turn taken, leave the signals
// to it until it lets the turn go and says so (a turn-free signal), or claimTurnMute
// passes. The holder announces the turn free after letting it go and waits until it
// hears its own announcement: signals are delivered to each listener in commit order,
// so by then it has heard every signal committed before the others listen again, and
// it takes the turn again for any it has not claimed for. Nothing is left to the poll
// tick but what a holder that dies mid-turn drops.

// workWaker is what a store offers for wake-ups that do not stampede (store.DB).
type workWaker interface {
	// SubscribeWork signals commits that may have made work claimable.
	SubscribeWork(ctx context.Context) <-chan int64
	// SubscribeTurns signals a claim turn let go.
	SubscribeTurns(ctx context.Context) <-chan int64
	// ClaimTurn takes the claim turn if no one holds it; release lets it go and
	// announces it free. A nil release with ok: no other runner to share with.
	ClaimTurn(ctx context.Context) (release func(), ok bool, err error)
}

// claimTurnHold is how long a runner keeps the claim turn at least: a signal reaches
// the runners at slightly different times, and a runner that hears it late must
// still find the turn taken, not claim a second time for it; and the turn's cost
// (a statement per runner) is paid once per hold, not once per signal.
const claimTurnHold = 100 * time.Millisecond

// claimTurnEcho bounds how long a runner that let the turn go waits to hear its own
// announcement (a round trip, unless the listener is reconnecting).
const claimTurnEcho = 250 * time.Millisecond

// claimTurnMute bounds how long a runner that found the turn taken leaves signals to
// its holder without hearing that it was let go.
const claimTurnMute = time.Second

// loop claims until ctx ends, waking on work-ready signals when it takes the claim
// turn (or, without them, on other writers' events), on freed slots and on the poll
// tick.
func (p *claimLoop) loop(ctx context.Context) {
	tick := time.NewTicker(p.cfg.Poll)
	defer tick.Stop()
	ww, _ := p.store.(workWaker)
	var work, turns <-chan int64
	foreign := p.events.foreign
	if ww != nil && !p.everyCommit {
		work, turns, foreign = ww.SubscribeWork(ctx), ww.SubscribeTurns(ctx), nil
	}
	mute := time.NewTimer(0)
	<-mute.C
	muted := false
	p.claimAll(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-work:
			if !ok {
				work, turns, foreign = nil, nil, p.events.foreign // the store closed: follow commits
				continue
			}
			if muted {
				continue // the turn's holder claims for it
			}
			if !p.takeTurn(ctx, ww, work, turns) {
				muted = true
				mute.Reset(claimTurnMute)
			}
		case <-turns:
			muted = false
		case <-mute.C:
			muted = false
		case <-foreign:
			p.claimAll(ctx)
		case <-p.wake:
			p.claimAll(ctx)
		case <-tick.C:
			p.claimAll(ctx)
		}
	}
}

// takeTurn claims for a work-ready signal if this runner takes the claim turn, and
// for every signal it hears while it holds it; false when another runner holds it. A
// turn that cannot be asked for (the database) is claimed for anyway.
func (p *claimLoop) takeTurn(ctx context.Context, ww workWaker, work, turns <-chan int64) bool {
	for ctx.Err() == nil {
		release, ok, err := ww.ClaimTurn(ctx)
		if err != nil {
			if ctx.Err() == nil {
				p.log.Warn("claim turn unavailable; claiming anyway", "err", err)
			}
			p.claimAll(ctx)
			return true
		}
		if !ok {
			return false
		}
		if release == nil {
			p.claimAll(ctx)
			return true
		}
		p.holdTurn(ctx, work)
		drain(turns) // an older announcement is not ours
		release()
		// Ours comes after every signal committed before it (see above).
		wait := time.NewTimer(claimTurnEcho)
		select {
		case <-turns:
		case <-wait.C:
		case <-ctx.Done():
		}
		wait.Stop()
		select {
		case _, open := <-work:
			if !open {
				return true
			}
		default:
			return true
		}
	}
	return true
}

// holdTurn claims, and claims again for each signal heard or slot freed, for
// claimTurnHold.
func (p *claimLoop) holdTurn(ctx context.Context, work <-chan int64) {
	hold := time.NewTimer(claimTurnHold)
	defer hold.Stop()
	for {
		p.claimAll(ctx)
		select {
		case _, open := <-work:
			if !open {
				return
			}
		case <-p.wake:
		case <-hold.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// drain empties a channel holding at most one pending value.
func drain(ch <-chan int64) {
	select {
	case <-ch:
	default:
	}
}
