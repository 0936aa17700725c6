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
// to it (they are muted) until it announces the turn let go, or claimTurnMute passes.
//
// No signal is lost: each reaches every runner, and a runner claims after hearing it
// unless it is muted or finds the turn taken, which it is only while someone holds
// the turn. The holder is never muted: a signal it hears while it holds the turn it
// claims for then; one it hears after, its loop handles like any other. The poll
// tick is left what is dropped while runners are muted by a holder that died
// mid-turn (at most claimTurnMute) and what the database's listener misses while it
// reconnects (it announces work once it listens again).

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
			if !p.takeTurn(ctx, ww, work) {
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
func (p *claimLoop) takeTurn(ctx context.Context, ww workWaker, work <-chan int64) bool {
	release, ok, err := ww.ClaimTurn(ctx)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			p.log.Warn("claim turn unavailable; claiming anyway", "err", err)
		}
		p.claimAll(ctx)
	case !ok:
		return false
	case release == nil:
		p.claimAll(ctx) // no other runner to hand the turn to
	default:
		p.holdTurn(ctx, work)
		release()
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
