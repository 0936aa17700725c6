package store_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
)

// TestAppendsCommitInIDOrder has concurrent transactions append events and ledger
// entries and dawdle before committing, while a reader follows both tables by id. A
// reader must never see an id before a smaller one that later commits: it would skip
// that one forever. With no rollbacks every id commits, so the reader must see
// exactly 1, 2, 3, … On PostgreSQL this is what the ledger's append trigger and the
// event horizon of ListEvents guarantee (ids are drawn at insert but commit in any
// order).
func TestAppendsCommitInIDOrder(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		const writers, perWriter = 6, 15
		done := make(chan struct{})
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range perWriter {
					err := db.InTx(ctx, func(tx models.Tx) error {
						if err := tx.AppendEvent(ctx, &models.Event{Type: "order.test"}); err != nil {
							return err
						}
						if err := tx.AppendLedgerEntry(ctx, &models.LedgerEntry{Type: "order.test", Message: []byte{byte(w)}}); err != nil {
							return err
						}
						time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
						return nil
					})
					if err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		go func() { wg.Wait(); close(done) }()

		var lastEvent, lastEntry int64
		// follow reads what is new and reports the first id seen out of order.
		follow := func() error {
			events, err := db.ListEvents(ctx, lastEvent, 1000)
			if err != nil {
				return err
			}
			for _, e := range events {
				if e.ID != lastEvent+1 {
					return fmt.Errorf("the reader saw event %d right after %d: an id was visible before a smaller one committed", e.ID, lastEvent)
				}
				lastEvent = e.ID
			}
			entries, err := db.ListLedger(ctx, models.LedgerFilter{AfterID: lastEntry, Limit: 1000})
			if err != nil {
				return err
			}
			for _, e := range entries {
				if e.ID != lastEntry+1 {
					return fmt.Errorf("the reader saw ledger entry %d right after %d", e.ID, lastEntry)
				}
				lastEntry = e.ID
			}
			return nil
		}
		var err error
		for finished := false; !finished && err == nil; {
			select {
			case <-done:
				finished = true
			default:
			}
			err = follow()
		}
		<-done // the writers finish before the store closes
		// On PostgreSQL the last events may wait behind the event horizon for a
		// while (a transaction of another test holds it back): read until all are in.
		for deadline := time.Now().Add(10 * time.Second); err == nil; time.Sleep(10 * time.Millisecond) {
			if err = follow(); lastEvent == writers*perWriter || time.Now().After(deadline) {
				break
			}
		}
		must(t, err)
		if want := int64(writers * perWriter); lastEvent != want || lastEntry != want {
			t.Fatalf("the reader saw %d events and %d ledger entries, want %d of each", lastEvent, lastEntry, want)
		}
	})
}
