package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

var quiet = slog.New(slog.DiscardHandler)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func allPosted(s *memStore, n int) func() bool {
	return func() bool {
		rows := s.all()
		if len(rows) != n {
			return false
		}
		for _, r := range rows {
			if r.Status != models.LedgerPosted {
				return false
			}
		}
		return true
	}
}

// The publisher wakes on store events (the fallback tick is an hour here).
func TestPublisherWakesOnEvents(t *testing.T) {
	s := newMemStore()
	var posted atomic.Int64
	p := NewPublisher(s, NewLocal(s), Options{Logger: quiet, PollInterval: time.Hour, OnPosted: func(models.LedgerEntry) { posted.Add(1) }})
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	_ = p.Start(ctx) // no second loop
	appendEntries(t, s, 1, 3)
	waitFor(t, "3 posted", allPosted(s, 3))
	appendEntries(t, s, 4, 2)
	waitFor(t, "5 posted", allPosted(s, 5))
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if posted.Load() != 5 || VerifyChain(s.all()) != nil {
		t.Fatal("chain")
	}
}

// failingLedger fails Submit for chosen entries.
type failingLedger struct {
	Ledger
	fail func(e *models.LedgerEntry) error
}

func (f failingLedger) Submit(ctx context.Context, e *models.LedgerEntry) (Receipt, error) {
	if err := f.fail(e); err != nil {
		return Receipt{}, err
	}
	return f.Ledger.Submit(ctx, e)
}

func TestPublisherRetriesWithBackoffAndFailsPermanent(t *testing.T) {
	s := newMemStore()
	appendEntries(t, s, 1, 4)
	var tries atomic.Int64
	l := failingLedger{Ledger: NewLocal(s), fail: func(e *models.LedgerEntry) error {
		switch e.ID {
		case 2:
			if tries.Add(1) <= 3 {
				return errors.New("ledger unavailable")
			}
		case 3:
			return Permanent(errors.New("message too large"))
		}
		return nil
	}}
	p := NewPublisher(s, l, Options{Logger: quiet, MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond, PollInterval: 10 * time.Millisecond})
	ctx := context.Background()
	_ = p.Start(ctx)
	defer func() { _ = p.Stop(ctx) }()
	waitFor(t, "entry 4 posted", func() bool { e, _ := s.GetLedgerEntry(ctx, 4); return e.Status == models.LedgerPosted })
	rows := s.all()
	if rows[1].Status != models.LedgerPosted || rows[1].Attempts != 3 || rows[1].LastError != "" {
		t.Fatalf("entry 2: %+v", rows[1])
	}
	if rows[2].Status != models.LedgerFailed || rows[2].LastError != "message too large" || rows[2].Attempts != 1 {
		t.Fatalf("entry 3: %+v", rows[2])
	}
	if rows[3].Sequence != 3 || VerifyChain(rows) != nil {
		t.Fatalf("entry 4: %+v %v", rows[3], VerifyChain(rows))
	}
}

// A publisher without the lock posts nothing until the holder lets go.
func TestPublisherWaitsForLock(t *testing.T) {
	s := newMemStore()
	appendEntries(t, s, 1, 2)
	lock := &memLock{}
	holder := lock.handle()
	if ok, _ := holder.TryLock(context.Background()); !ok {
		t.Fatal("lock")
	}
	p := NewPublisher(s, NewLocal(s), Options{Logger: quiet, Lock: lock.handle(), PollInterval: 5 * time.Millisecond})
	ctx := context.Background()
	_ = p.Start(ctx)
	time.Sleep(50 * time.Millisecond)
	if s.all()[0].Status != models.LedgerPending {
		t.Fatal("posted without the lock")
	}
	_ = holder.Unlock(ctx)
	waitFor(t, "posted", allPosted(s, 2))
	_ = p.Stop(ctx)
	if ok, _ := holder.TryLock(ctx); !ok {
		t.Fatal("Stop did not release the lock")
	}
}

func TestPermanent(t *testing.T) {
	if Permanent(nil) != nil || IsPermanent(errors.New("x")) || !IsPermanent(errors.Join(errors.New("a"), Permanent(errors.New("b")))) {
		t.Fatal("Permanent")
	}
}

// slowPipeline is a Pipeline whose consensus takes a while: Send puts the entry on
// its ledger at once (the order Sends come in is the ledger's order) and Await
// returns the receipt after a latency that varies by entry, so receipts arrive out
// of order. It counts the most entries in flight at once.
type slowPipeline struct {
	latency     func(id int64) time.Duration
	failAwait   func(id int64) bool // Await fails, once, for these entries
	mu          sync.Mutex
	seq         int64
	byTx        map[string]int64
	failed      map[int64]bool
	inFlight    int
	maxInFlight int
}

func newSlowPipeline(latency func(int64) time.Duration) *slowPipeline {
	return &slowPipeline{latency: latency, byTx: map[string]int64{}, failed: map[int64]bool{}, failAwait: func(int64) bool { return false }}
}

func (p *slowPipeline) Name() string { return "slow" }

func (p *slowPipeline) Prepare(_ context.Context, e *models.LedgerEntry) error {
	e.TxID, e.TxBytes = fmt.Sprintf("tx-%d", e.ID), []byte("signed")
	return nil
}

func (p *slowPipeline) Send(_ context.Context, e *models.LedgerEntry) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.byTx[e.TxID]; !ok { // a transaction id is taken once
		p.seq++
		p.byTx[e.TxID] = p.seq
	}
	p.inFlight++
	p.maxInFlight = max(p.maxInFlight, p.inFlight)
	return nil
}

func (p *slowPipeline) receipt(e *models.LedgerEntry) Receipt {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Receipt{Sequence: p.byTx[e.TxID], RunningHash: make([]byte, HashSize), ConsensusAt: time.Now(), TxID: e.TxID}
}

func (p *slowPipeline) Await(ctx context.Context, e *models.LedgerEntry) (Receipt, error) {
	defer func() { p.mu.Lock(); p.inFlight--; p.mu.Unlock() }()
	select {
	case <-time.After(p.latency(e.ID)):
	case <-ctx.Done():
		return Receipt{}, ctx.Err()
	}
	p.mu.Lock()
	fail := p.failAwait(e.ID) && !p.failed[e.ID]
	p.failed[e.ID] = p.failed[e.ID] || fail
	p.mu.Unlock()
	if fail {
		return Receipt{}, fmt.Errorf("no receipt yet: %w", ErrOutcomeUnknown)
	}
	return p.receipt(e), nil
}

func (p *slowPipeline) Submit(ctx context.Context, e *models.LedgerEntry) (Receipt, error) {
	if err := p.Send(ctx, e); err != nil {
		return Receipt{}, err
	}
	return p.Await(ctx, e)
}

func (p *slowPipeline) Lookup(_ context.Context, e *models.LedgerEntry) (Receipt, bool, error) {
	p.mu.Lock()
	_, ok := p.byTx[e.TxID]
	p.mu.Unlock()
	if !ok {
		return Receipt{}, false, nil
	}
	return p.receipt(e), true, nil
}

// With a ledger whose receipts take a while and come back out of order, the publisher
// keeps several entries in flight, records them strictly in ID order, and takes a
// fraction of the one-at-a-time time; an entry whose receipt fails is resolved by
// Lookup before anything after it is recorded.
func TestPublisherPipelines(t *testing.T) {
	const total, latency = 48, 40 * time.Millisecond
	s := newMemStore()
	appendEntries(t, s, 1, total)
	l := newSlowPipeline(func(id int64) time.Duration { return latency * time.Duration(1+id%3) / 2 })
	l.failAwait = func(id int64) bool { return id == 20 }
	var mu sync.Mutex
	var order []int64
	p := NewPublisher(s, l, Options{Logger: quiet, OnPosted: func(e models.LedgerEntry) {
		mu.Lock()
		order = append(order, e.ID)
		mu.Unlock()
	}})
	start := time.Now()
	n, err := p.Drain(context.Background())
	took := time.Since(start)
	if err != nil || n != total {
		t.Fatalf("drained %d: %v", n, err)
	}
	for i, id := range order {
		if id != int64(i+1) {
			t.Fatalf("recorded out of order: %v", order)
		}
	}
	for _, r := range s.all() {
		if r.Status != models.LedgerPosted || r.Sequence != r.ID || r.TxID != fmt.Sprintf("tx-%d", r.ID) {
			t.Fatalf("entry %d: %+v", r.ID, r)
		}
	}
	// One at a time would take total × the mean latency (1.92s); Depth 8 an eighth.
	oneAtATime := total * latency
	t.Logf("%d entries in %v (one at a time: %v), at most %d in flight", total, took.Round(time.Millisecond), oneAtATime, l.maxInFlight)
	if l.maxInFlight < 4 || l.maxInFlight > DefaultDepth {
		t.Fatalf("at most %d in flight, want 4..%d", l.maxInFlight, DefaultDepth)
	}
	if took > oneAtATime/2 {
		t.Fatalf("pipelined drain took %v, more than half the one-at-a-time %v", took, oneAtATime)
	}
}
