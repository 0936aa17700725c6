package store_test

import (
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
)

// TestWriteBehindServesASettle: what a settle batch reads through a WriteBehind after
// PrefetchLocks and PrefetchAttempts is the transaction's own latest state (a task as
// last written, attempts with their held updates), none of it costs a flush, and one
// flush writes the updated attempts and tasks as UpdateAttempt and UpdateTask would.
func TestWriteBehindServesASettle(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		boss := agent(t, db, "boss", "lead")
		a, b := task(t, db, boss.ID, "developer", nil), task(t, db, boss.ID, "developer", nil)
		att := &models.Attempt{TaskID: a.ID, Number: 1, AgentID: boss.ID, RunnerID: "r1"}
		must(t, db.CreateAttempt(ctx, att))
		must(t, db.InTx(ctx, func(tx models.Tx) error {
			wb := models.NewWriteBehind(tx, tx.(models.BatchWriter))
			must(t, wb.PrefetchLocks(ctx, tx.(models.TasksLocker), []int64{b.ID, a.ID}))
			must(t, wb.PrefetchAttempts(ctx, tx.(models.AttemptsReader), []int64{a.ID, b.ID}))
			got, err := wb.LockTask(ctx, a.ID)
			must(t, err)
			got.Title = "settled"
			must(t, wb.UpdateTask(ctx, got))
			att.Outcome, att.Stage = models.OutcomePassed, "checks"
			must(t, wb.UpdateAttempt(ctx, att))
			again, err := wb.LockTask(ctx, a.ID)
			must(t, err)
			if again.Title != "settled" {
				t.Errorf("LockTask after a held write: title %q, want the held one", again.Title)
			}
			as, err := wb.ListAttempts(ctx, a.ID)
			must(t, err)
			if len(as) != 1 || as[0].Outcome != models.OutcomePassed {
				t.Errorf("ListAttempts after a held update: %+v", as)
			}
			if as, err := wb.ListAttempts(ctx, b.ID); err != nil || len(as) != 0 {
				t.Errorf("ListAttempts of a task without attempts: %+v, %v", as, err)
			}
			if deps, err := wb.Dependents(ctx, a.ID); err != nil || len(deps) != 0 {
				t.Errorf("Dependents: %+v, %v", deps, err)
			}
			if !wb.Held() {
				t.Fatal("a served read flushed the held writes")
			}
			// Below the WriteBehind nothing is written yet.
			if cur, err := tx.GetTask(ctx, a.ID); err != nil || cur.Title == "settled" {
				t.Errorf("the task row was written before the flush: %+v, %v", cur, err)
			}
			must(t, wb.Flush(ctx))
			// After a flush, a locked task is served as the flush wrote it.
			if after, err := wb.LockTask(ctx, a.ID); err != nil || after.Title != "settled" {
				t.Errorf("LockTask after the flush: %+v, %v", after, err)
			}
			return nil
		}))
		got, err := db.GetTask(ctx, a.ID)
		must(t, err)
		if got.Title != "settled" {
			t.Errorf("task after the flush: title %q", got.Title)
		}
		as, err := db.ListAttempts(ctx, a.ID)
		must(t, err)
		if len(as) != 1 || as[0].Outcome != models.OutcomePassed || as[0].Stage != "checks" || as[0].Number != 1 {
			t.Errorf("attempts after the flush: %+v", as)
		}
	})
}
