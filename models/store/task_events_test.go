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
