package runner

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
)

// scriptedTurns is a store whose work-ready signals and claim turn the test drives.
type scriptedTurns struct {
	models.Store
	work, turns chan int64
	free        atomic.Bool  // the turn can be taken
	tries       atomic.Int64 // ClaimTurn calls
}

func (s *scriptedTurns) SubscribeWork(context.Context) <-chan int64  { return s.work }
func (s *scriptedTurns) SubscribeTurns(context.Context) <-chan int64 { return s.turns }
func (s *scriptedTurns) ClaimTurn(context.Context) (func(), bool, error) {
	s.tries.Add(1)
	if !s.free.Load() {
		return nil, false, nil
	}
	return func() {}, true, nil
}

// A runner that found the claim turn taken leaves the signals that follow to the
// holder (no claim, not even a try for the turn) until the turn is announced let go,
// or claimTurnMute passes; then it takes the turn for the next signal and claims.
func TestMutedRunnerWaitsForTheTurnLetGo(t *testing.T) {
	h := newHarness(t, store.DialectSQLite, func(c *Config) { c.Poll = time.Minute })
	fake := &scriptedTurns{Store: h.db, work: make(chan int64, 1), turns: make(chan int64, 1)}
	p, err := New(h.cfg)
	must(t, err)
	p.claims.common.store = fake
	h.pool = p
	must(t, p.Start(h.ctx))
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	cl := &p.claims.claims
	h.waitFor("the claim at Start", func() bool { return cl.Load() == 1 })
	signal := func(ch chan int64) { ch <- 1; time.Sleep(200 * time.Millisecond) }
	expect := func(what string, tries, claims int64) {
		t.Helper()
		if fake.tries.Load() != tries || cl.Load() != claims {
			t.Fatalf("%s: %d tries for the turn, %d claims; want %d, %d", what, fake.tries.Load(), cl.Load(), tries, claims)
		}
	}
	signal(fake.work)
	expect("the turn taken", 1, 1)
	signal(fake.work)
	expect("muted", 1, 1)
	fake.free.Store(true)
	signal(fake.turns)
	signal(fake.work)
	expect("the turn let go", 2, 2)

	time.Sleep(claimTurnHold)
	fake.free.Store(false)
	signal(fake.work)
	expect("taken again", 3, 2)
	time.Sleep(claimTurnMute)
	fake.free.Store(true)
	signal(fake.work)
	expect("the mute passed", 4, 3)
}
