package gateway

import (
	"context"
	"math"
	"sync"
)

// Cap is a spending cap a credential's calls count against. Caps with the same Key
// are one pool shared by every live credential that names it, so concurrent attempts
// under one goal draw on one remainder.
type Cap struct {
	// Key names the budget: "task:12", "goal:3", "agent:7".
	Key string
	// RemainingUSD is what the budget has left, as the store says, not counting what
	// live gateway credentials have spent (the gateway counts that itself).
	RemainingUSD float64
}

// pool is one cap's state while live credentials name it.
type pool struct {
	key string
	// limit is the room the store last gave, excluding live credentials' spend. A
	// later grant can lower it, never raise it, so a stale reading never widens a cap.
	limit float64
	spent float64 // settled cost of live credentials' calls
	held  float64 // reservations of calls in flight
	refs  int     // live credentials naming the pool
}

// room is what the pool can still reserve.
func (p *pool) room() float64 { return p.limit - p.spent - p.held }

// ledger holds the pools. One mutex guards all of them so that a call reserves
// against all its caps at once or against none.
type ledger struct {
	mu      sync.Mutex
	pools   map[string]*pool
	changed chan struct{} // closed at a settle, for calls waiting for room
}

// join adds a credential's caps to the ledger and returns their pools. A cap whose
// pool exists lowers its limit to RemainingUSD when that is less.
func (l *ledger) join(caps []Cap) []*pool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pools == nil {
		l.pools = map[string]*pool{}
	}
	out := make([]*pool, 0, len(caps))
	for _, c := range caps {
		p := l.pools[c.Key]
		if p == nil {
			p = &pool{key: c.Key, limit: c.RemainingUSD}
			l.pools[c.Key] = p
		}
		p.limit = math.Min(p.limit, c.RemainingUSD)
		p.refs++
		out = append(out, p)
	}
	return out
}

// leave takes a revoked credential out of its pools. What it spent leaves both the
// pool's spent and its limit (the store now counts it), so the room does not change;
// a pool no live credential names is dropped.
func (l *ledger) leave(ps []*pool, spentUSD float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range ps {
		p.spent -= spentUSD
		p.limit -= spentUSD
		if p.refs--; p.refs == 0 {
			delete(l.pools, p.key)
		}
	}
}

// reserve holds usd in every pool, or in none. When a pool lacks room only because
// calls in flight hold it, reserve waits for them to settle (their actual cost is
// usually well under their worst case) rather than refuse a call that fits: a
// refusal ends the attempt. It refuses, with the pool's key, when even with every
// reservation released the pool could not hold usd, or when ctx ends first.
func (l *ledger) reserve(ctx context.Context, ps []*pool, usd float64) (refusedBy string, ok bool) {
	for {
		l.mu.Lock()
		key, fits, never := l.fit(ps, usd)
		if fits {
			for _, p := range ps {
				p.held += usd
			}
		}
		changed := l.changedLocked()
		l.mu.Unlock()
		switch {
		case fits:
			return "", true
		case never:
			return key, false
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return key, false
		}
	}
}

// fit reports whether usd fits every pool now; if not, the first pool short of
// room and whether it could never hold usd (its room with nothing held).
func (l *ledger) fit(ps []*pool, usd float64) (key string, fits, never bool) {
	for _, p := range ps {
		if p.room() < usd || p.room() <= 0 {
			free := p.limit - p.spent
			return p.key, false, free < usd || free <= 0
		}
	}
	return "", true, false
}

// exhausted names a pool of ps with nothing left even were every call in flight to
// cost nothing, "" when there is none: no call under it can ever be admitted.
func (l *ledger) exhausted(ps []*pool) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range ps {
		if p.limit-p.spent <= 0 {
			return p.key
		}
	}
	return ""
}

// changedLocked is a channel closed at the next settle.
func (l *ledger) changedLocked() chan struct{} {
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.changed
}

// settle releases a call's reservation and counts its cost.
func (l *ledger) settle(ps []*pool, reserved, costUSD float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range ps {
		p.held -= reserved
		p.spent += costUSD
	}
	if l.changed != nil {
		close(l.changed) // wake the calls waiting for room
		l.changed = nil
	}
}

// CapState is a pool as the gateway sees it now.
type CapState struct {
	Key string
	// LimitUSD is the room the grants gave (the lowest), less what revoked
	// credentials spent; SpentUSD is the settled cost of live credentials' calls and
	// HeldUSD the reservations of calls in flight.
	LimitUSD, SpentUSD, HeldUSD float64
	// Credentials counts the live credentials sharing the pool.
	Credentials int
}

// state reads the pool key; false when no live credential names it.
func (l *ledger) state(key string) (CapState, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.pools[key]
	if p == nil {
		return CapState{}, false
	}
	return CapState{Key: key, LimitUSD: p.limit, SpentUSD: p.spent, HeldUSD: p.held, Credentials: p.refs}, true
}
