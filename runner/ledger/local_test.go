package ledger

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// appendEntries appends n task.complete entries (every fifth a task.blocked one with
// a payload) to s.
func appendEntries(t testing.TB, s *memStore, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		var e *models.LedgerEntry
		var err error
		if i%5 == 4 {
			e, err = TaskBlocked{TaskID: int64(i), Attempts: 2, Stage: "verify", Payload: []byte(fmt.Sprintf(`{"i":%d}`, i)), At: time.Now()}.Entry()
		} else {
			e, err = TaskComplete{TaskID: int64(i), Agent: fmt.Sprintf("dev-%d", i), Verifier: "runner", Contract: hashA, At: time.Now()}.Entry()
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := s.AppendLedgerEntry(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
}

func postedLocalChain(t *testing.T, n int) *memStore {
	t.Helper()
	s := newMemStore()
	appendEntries(t, s, 1, n)
	p := NewPublisher(s, NewLocal(s), Options{Logger: quiet})
	got, err := p.Drain(context.Background())
	if err != nil || got != n {
		t.Fatalf("drain: %d, %v", got, err)
	}
	if err := VerifyChain(s.all()); err != nil {
		t.Fatalf("fresh chain: %v", err)
	}
	return s
}

func wantChainError(t *testing.T, err error, id int64, problem string) {
	t.Helper()
	var ce *ChainError
	if !errors.As(err, &ce) {
		t.Fatalf("want a ChainError at entry %d (%s), got %v", id, problem, err)
	}
	if ce.EntryID != id || ce.Problem != problem {
		t.Fatalf("want entry %d %s, got %v", id, problem, ce)
	}
	t.Log(ce)
}

func TestLocalChainPostsInOrder(t *testing.T) {
	s := postedLocalChain(t, 30)
	for i, e := range s.all() {
		if e.Status != models.LedgerPosted || e.Sequence != int64(i+1) || e.ConsensusAt == nil || e.PostedAt == nil || len(e.RunningHash) != 96 {
			t.Fatalf("entry %d: %+v", e.ID, e)
		}
	}
	seq, tip := ChainTip(s.all())
	if seq != 30 || tip == "" {
		t.Fatalf("tip %d %q", seq, tip)
	}
	// A second Local over the same rows continues the chain.
	appendEntries(t, s, 31, 5)
	if n, err := NewPublisher(s, NewLocal(s), Options{Logger: quiet}).Drain(context.Background()); err != nil || n != 5 {
		t.Fatalf("%d %v", n, err)
	}
	if err := VerifyChain(s.all()); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyChainAltered(t *testing.T) {
	s := postedLocalChain(t, 20)
	rows := s.all()
	rows[6].Message = []byte(string(rows[6].Message[:len(rows[6].Message)-2]) + "X}")
	wantChainError(t, VerifyChain(rows), 7, ChainAltered)

	rows = s.all()
	rows[9].Payload = []byte(`{"i":999}`) // entry 10 is task.blocked
	wantChainError(t, VerifyChain(rows), 10, ChainAltered)

	rows = s.all()
	at := rows[11].ConsensusAt.Add(time.Microsecond)
	rows[11].ConsensusAt = &at
	wantChainError(t, VerifyChain(rows), 12, ChainAltered)

	// Re-hashing the altered entry does not help: the next one breaks.
	rows = s.all()
	rows[2].Message = []byte(`{"v":1,"type":"task.complete","task":3,"contract":"` + hashA + `","override":false,"ts":"x"}`)
	ph, _ := decodeHex(rows[1].RunningHash)
	rows[2].RunningHash = encodeHex(ChainHash(ph, rows[2].Sequence, *rows[2].ConsensusAt, rows[2].Message))
	wantChainError(t, VerifyChain(rows), 4, ChainAltered)
}

func TestVerifyChainDeleted(t *testing.T) {
	s := postedLocalChain(t, 20)
	rows := s.all()
	rows = append(rows[:7], rows[8:]...) // remove entry 8
	wantChainError(t, VerifyChain(rows), 9, ChainMissing)

	rows = s.all()
	rows = append(rows[:4], rows[9:]...) // remove entries 5..9
	wantChainError(t, VerifyChain(rows), 10, ChainMissing)

	rows = s.all()[1:] // remove the first
	wantChainError(t, VerifyChain(rows), 2, ChainMissing)
}

func TestVerifyChainSwapped(t *testing.T) {
	s := postedLocalChain(t, 20)
	// Rows listed in the wrong order.
	rows := s.all()
	rows[4], rows[5] = rows[5], rows[4]
	wantChainError(t, VerifyChain(rows), 6, ChainReordered)

	// Two rows' contents swapped, ids kept (what an UPDATE would do).
	rows = s.all()
	a, b := rows[4], rows[5]
	rows[4], rows[5] = b, a
	rows[4].ID, rows[5].ID = 5, 6
	wantChainError(t, VerifyChain(rows), 5, ChainReordered)

	// Only the messages swapped.
	rows = s.all()
	rows[4].Message, rows[5].Message = rows[5].Message, rows[4].Message
	wantChainError(t, VerifyChain(rows), 5, ChainAltered)
}

func TestVerifyChainSkipsUnposted(t *testing.T) {
	s := postedLocalChain(t, 5)
	appendEntries(t, s, 6, 2) // pending
	if err := VerifyChain(s.all()); err != nil {
		t.Fatal(err)
	}
	rows := s.all()
	rows[2].TxID = "0.0.2@1.1"
	wantChainError(t, VerifyChain(rows), 3, ChainAltered)
}

func TestLocalLookup(t *testing.T) {
	s := postedLocalChain(t, 2)
	l := NewLocal(s)
	rows := s.all()
	r, ok, err := l.Lookup(context.Background(), &rows[1])
	if err != nil || !ok || r.Sequence != 2 {
		t.Fatalf("%v %v %v", r, ok, err)
	}
	e := models.LedgerEntry{ID: 9, Status: models.LedgerPending}
	if _, ok, err := l.Lookup(context.Background(), &e); ok || err != nil {
		t.Fatal("pending entry found")
	}
	if _, err := l.Submit(context.Background(), &e); !IsPermanent(err) {
		t.Fatalf("empty message: %v", err)
	}
}

// An unrecorded local Submit (the receipt write failed) is simply submitted again and
// gets the same sequence number.
func TestLocalSubmitNotRecorded(t *testing.T) {
	s := newMemStore()
	appendEntries(t, s, 1, 3)
	fails := 1
	s.failUpd = func(e *models.LedgerEntry) error {
		if e.ID == 2 && e.Status == models.LedgerPosted && fails > 0 {
			fails--
			return errors.New("disk full")
		}
		return nil
	}
	p := NewPublisher(s, NewLocal(s), Options{Logger: quiet})
	if _, err := p.Drain(context.Background()); err == nil {
		t.Fatal("want the injected failure")
	}
	if n, err := p.Drain(context.Background()); err != nil || n != 2 {
		t.Fatalf("%d %v", n, err)
	}
	if err := VerifyChain(s.all()); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkLocalPublish(b *testing.B) {
	s := newMemStore()
	appendEntries(b, s, 1, b.N)
	p := NewPublisher(s, NewLocal(s), Options{Logger: quiet})
	b.ResetTimer()
	start := time.Now()
	n, err := p.Drain(context.Background())
	if err != nil || n != b.N {
		b.Fatalf("%d %v", n, err)
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "entries/s")
}

func decodeHex(s string) ([]byte, error) { return hex.DecodeString(s) }
func encodeHex(b []byte) string          { return hex.EncodeToString(b) }
