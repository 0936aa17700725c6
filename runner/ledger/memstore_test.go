package ledger

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/countersign/countersign/models"
)

// memStore implements the part of models.Store the publisher and the local ledger use
// (ListLedger, UpdateLedgerEntry, AppendLedgerEntry, GetLedgerEntry, Subscribe), with
// the value semantics of a database: callers get copies. Any other method panics
// through the nil embedded interface.
type memStore struct {
	models.Store

	mu      sync.Mutex
	rows    []models.LedgerEntry
	subs    []chan int64
	failUpd func(e *models.LedgerEntry) error // injected UpdateLedgerEntry failure
}

func newMemStore() *memStore { return &memStore{} }

func clone(e models.LedgerEntry) models.LedgerEntry {
	e.Message = append([]byte(nil), e.Message...)
	if e.Payload != nil {
		e.Payload = append([]byte(nil), e.Payload...)
	}
	if e.TxBytes != nil {
		e.TxBytes = append([]byte(nil), e.TxBytes...)
	}
	if e.ConsensusAt != nil {
		t := *e.ConsensusAt
		e.ConsensusAt = &t
	}
	if e.PostedAt != nil {
		t := *e.PostedAt
		e.PostedAt = &t
	}
	return e
}

func (s *memStore) AppendLedgerEntry(_ context.Context, e *models.LedgerEntry) error {
	s.mu.Lock()
	e.ID = int64(len(s.rows) + 1)
	e.Status = models.LedgerPending
	if e.CreatedAt.IsZero() {
		e.CreatedAt = time.Now().UTC()
	}
	s.rows = append(s.rows, clone(*e))
	subs := append([]chan int64(nil), s.subs...)
	s.mu.Unlock()
	for _, c := range subs {
		select {
		case c <- e.ID:
		default:
		}
	}
	return nil
}

func (s *memStore) UpdateLedgerEntry(_ context.Context, e *models.LedgerEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failUpd != nil {
		if err := s.failUpd(e); err != nil {
			return err
		}
	}
	if e.ID < 1 || int(e.ID) > len(s.rows) {
		return models.NotFound("ledger entry", e.ID)
	}
	s.rows[e.ID-1] = clone(*e)
	return nil
}

func (s *memStore) GetLedgerEntry(_ context.Context, id int64) (*models.LedgerEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id < 1 || int(id) > len(s.rows) {
		return nil, models.NotFound("ledger entry", id)
	}
	e := clone(s.rows[id-1])
	return &e, nil
}

func (s *memStore) ListLedger(_ context.Context, f models.LedgerFilter) ([]models.LedgerEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []models.LedgerEntry
	for _, r := range s.rows {
		if r.ID <= f.AfterID || (f.Status != "" && r.Status != f.Status) {
			continue
		}
		out = append(out, clone(r))
		if f.Limit > 0 && len(out) == f.Limit {
			break
		}
	}
	return out, nil
}

func (s *memStore) Subscribe(ctx context.Context) <-chan int64 {
	c := make(chan int64, 1)
	s.mu.Lock()
	s.subs = append(s.subs, c)
	s.mu.Unlock()
	go func() {
		<-ctx.Done()
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, x := range s.subs {
			if x == c {
				s.subs = append(s.subs[:i], s.subs[i+1:]...)
				break
			}
		}
		close(c)
	}()
	return c
}

func (s *memStore) Dialect() string { return "memory" }

// all returns every row.
func (s *memStore) all() []models.LedgerEntry {
	out, _ := s.ListLedger(context.Background(), models.LedgerFilter{})
	return out
}

// memLock is an in-process Lock shared by publishers that stand for processes.
type memLock struct {
	mu    sync.Mutex
	owner *memLockHandle
}

type memLockHandle struct{ l *memLock }

func (l *memLock) handle() *memLockHandle { return &memLockHandle{l: l} }

func (h *memLockHandle) TryLock(context.Context) (bool, error) {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	if h.l.owner == nil || h.l.owner == h {
		h.l.owner = h
		return true, nil
	}
	return false, nil
}

func (h *memLockHandle) Unlock(context.Context) error {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	if h.l.owner != h {
		return errors.New("not held")
	}
	h.l.owner = nil
	return nil
}
