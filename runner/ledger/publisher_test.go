package ledger

import (
	"context"
	"errors"
	"log/slog"
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
