package ledger

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store/storetest"
	"github.com/countersign/countersign/runner/ledger/hcsfake"
)

// appendToStore appends n entries (every fifth task.blocked) through a models.Store.
func appendToStore(t *testing.T, s models.Store, from, n int) {
	t.Helper()
	mem := newMemStore()
	appendEntries(t, mem, from, n)
	for _, e := range mem.all() {
		e.ID = 0
		if err := s.AppendLedgerEntry(context.Background(), &e); err != nil {
			t.Fatal(err)
		}
	}
}

func listAll(t *testing.T, s models.Store) []models.LedgerEntry {
	t.Helper()
	rows, err := s.ListLedger(context.Background(), models.LedgerFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// The publisher and both ledgers against the real store on both dialects: the local
// chain verifies after a round trip through the database (times, hashes, bytes), and
// HCS posts exactly once with a lost reply and a takeover.
func TestStoreIntegration(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect+"/local", func(t *testing.T) {
			s := storetest.Open(t, dialect)
			ctx := context.Background()
			appendToStore(t, s, 1, 25)
			p := NewPublisher(s, NewLocal(s), Options{Logger: quiet, PollInterval: 10 * time.Millisecond})
			if err := p.Start(ctx); err != nil {
				t.Fatal(err)
			}
			appendToStore(t, s, 26, 5) // wakes the publisher through Subscribe
			waitFor(t, "30 posted", func() bool {
				rows, _ := s.ListLedger(ctx, models.LedgerFilter{Status: models.LedgerPending})
				return len(rows) == 0 && len(listAll(t, s)) == 30
			})
			_ = p.Stop(ctx)
			rows := listAll(t, s)
			if err := VerifyChain(rows); err != nil {
				t.Fatal(err)
			}
			// Alter a stored message through the store: verify names it.
			rows[9].Message = bytes.Replace(rows[9].Message, []byte(`"task":10`), []byte(`"task":11`), 1)
			if err := s.UpdateLedgerEntry(ctx, &rows[9]); err != nil {
				t.Fatal(err)
			}
			wantChainError(t, VerifyChain(listAll(t, s)), 10, ChainAltered)
		})
		t.Run(dialect+"/hcs", func(t *testing.T) {
			s := storetest.Open(t, dialect)
			node, h, topic := fakeHCS(t)
			ctx := context.Background()
			appendToStore(t, s, 1, 20)
			// First process: prepares and saves entry 1, then "crashes" before sending.
			first, err := s.ListLedger(ctx, models.LedgerFilter{Status: models.LedgerPending, Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			if err := h.Prepare(ctx, &first[0]); err != nil {
				t.Fatal(err)
			}
			if err := s.UpdateLedgerEntry(ctx, &first[0]); err != nil {
				t.Fatal(err)
			}
			node.FailNext(hcsfake.FaultLoseReplyAfterAccept, 1)
			n, err := NewPublisher(s, h, Options{Logger: quiet}).Drain(ctx)
			if err != nil || n != 20 {
				t.Fatalf("%d %v", n, err)
			}
			msgs := node.Messages(topic)
			rows := listAll(t, s)
			if len(msgs) != 20 {
				t.Fatalf("%d messages", len(msgs))
			}
			if rows[0].TxID != first[0].TxID {
				t.Fatal("the prepared transaction was not the one sent")
			}
			for i, r := range rows {
				if r.Status != models.LedgerPosted || r.Sequence != int64(i+1) || !bytes.Equal(msgs[i].Contents, r.Message) || r.TxID != msgs[i].TxID {
					t.Fatalf("entry %d: %+v", r.ID, r)
				}
			}
		})
	}
}
