package store_test

import (
	"context"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store/storetest"
)

// TestListTaskEvents: a task's events only, its newest ones, oldest first.
func TestListTaskEvents(t *testing.T) {
	for _, d := range storetest.Dialects() {
		t.Run(d, func(t *testing.T) {
			ctx := context.Background()
			db := storetest.Open(t, d)
			one, two := int64(1), int64(2)
			for i := 0; i < 7; i++ {
				for _, id := range []*int64{&one, &two, nil} {
					if err := db.AppendEvent(ctx, &models.Event{Type: "task.test", TaskID: id}); err != nil {
						t.Fatal(err)
					}
				}
			}
			evs, err := db.ListTaskEvents(ctx, one, 5)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 5 {
				t.Fatalf("%d events, want the newest 5", len(evs))
			}
			for i, e := range evs {
				if e.TaskID == nil || *e.TaskID != one {
					t.Fatalf("event %d belongs to task %v", e.ID, e.TaskID)
				}
				if i > 0 && e.ID <= evs[i-1].ID {
					t.Fatal("not oldest first")
				}
			}
			all, _ := db.ListEvents(ctx, 0, 1000)
			if last := all[len(all)-3]; evs[4].ID != last.ID { // each round appends task 1, task 2, then no task
				t.Fatalf("newest event of task 1 is %d, got %d", last.ID, evs[4].ID)
			}
			if none, err := db.ListTaskEvents(ctx, 99, 10); err != nil || len(none) != 0 {
				t.Fatalf("%v %v", none, err)
			}
		})
	}
}

// TestCounts: the count queries behind every page render and /metrics.
func TestCounts(t *testing.T) {
	for _, d := range storetest.Dialects() {
		t.Run(d, func(t *testing.T) {
			ctx := context.Background()
			db := storetest.Open(t, d)
			if id, err := db.LastEventID(ctx); err != nil || id != 0 {
				t.Fatalf("empty: %d %v", id, err)
			}
			for i := 0; i < 3; i++ {
				if err := db.AppendEvent(ctx, &models.Event{Type: "x"}); err != nil {
					t.Fatal(err)
				}
			}
			all, _ := db.ListEvents(ctx, 0, 10)
			if id, err := db.LastEventID(ctx); err != nil || id != all[2].ID {
				t.Fatalf("last event %d, want %d (%v)", id, all[2].ID, err)
			}
			for i := 0; i < 3; i++ {
				e := &models.LedgerEntry{Type: models.LedgerTaskComplete, Message: []byte(`{}`), Status: models.LedgerPending}
				if err := db.AppendLedgerEntry(ctx, e); err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					e.Status = models.LedgerPosted
					if err := db.UpdateLedgerEntry(ctx, e); err != nil {
						t.Fatal(err)
					}
				}
			}
			if n, err := db.CountLedger(ctx, models.LedgerPending); err != nil || n != 2 {
				t.Fatalf("pending %d %v", n, err)
			}
			if n, _ := db.CountLedger(ctx, ""); n != 3 {
				t.Fatalf("all %d", n)
			}
			if n, err := db.CountInbox(ctx, models.InboxFilter{}); err != nil || n != 0 {
				t.Fatalf("inbox %d %v", n, err)
			}
		})
	}
}
