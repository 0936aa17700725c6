package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
)

// TestWriteHeldWritesWhatUpdateTaskWould: the batched writes of a claim leave the
// rows as the row-by-row calls do, and set the inserted rows' ids.
func TestWriteHeldWritesWhatUpdateTaskWould(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		boss := agent(t, db, "boss", "lead")
		tk := task(t, db, boss.ID, "developer", nil)
		until := time.Now().Add(time.Minute).UTC().Truncate(time.Microsecond)
		var att *models.Attempt
		var tok *models.Token
		must(t, db.InTx(ctx, func(tx models.Tx) error {
			wb := models.NewWriteBehind(tx, tx.(models.BatchWriter))
			tk.State, tk.AssigneeID, tk.BuilderID, tk.LeaseOwner, tk.LeaseUntil = models.TaskInProgress, &boss.ID, &boss.ID, "r1", &until
			must(t, wb.UpdateTask(ctx, tk))
			att = &models.Attempt{TaskID: tk.ID, Number: 1, AgentID: boss.ID, RunnerID: "r1", StartedAt: time.Now().UTC()}
			must(t, wb.CreateAttempt(ctx, att))
			tok = &models.Token{AgentID: boss.ID, Name: "attempt 1", Hash: "h-" + time.Now().String(), TaskID: &tk.ID, Attempt: 1}
			must(t, wb.CreateToken(ctx, tok))
			return flush(ctx, wb)
		}))
		if att.ID == 0 || tok.ID == 0 {
			t.Fatalf("ids not set: attempt %d, token %d", att.ID, tok.ID)
		}
		got, err := db.GetTask(ctx, tk.ID)
		must(t, err)
		if got.State != models.TaskInProgress || got.LeaseOwner != "r1" || got.LeaseUntil == nil || !got.LeaseUntil.Equal(until) || got.Title != tk.Title {
			t.Errorf("task after the batched write: %+v", got)
		}
		as, err := db.ListAttempts(ctx, tk.ID)
		must(t, err)
		if len(as) != 1 || as[0].ID != att.ID || as[0].Outcome != models.OutcomeRunning {
			t.Errorf("attempts after the batched write: %+v", as)
		}
		if got, err := db.GetToken(ctx, tok.ID); err != nil || got.Hash != tok.Hash {
			t.Errorf("token %d: %+v, %v", tok.ID, got, err)
		}
	})
}

func flush(ctx context.Context, wb *models.WriteBehind) error { return wb.Flush(ctx) }

// TestWriteBehindUndoAndReads: what a try held after Mark is gone after Undo (a
// refused claim of one task leaves nothing behind for it), what was held before stays;
// and a read WriteBehind does not serve itself sees every held write.
func TestWriteBehindUndoAndReads(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		boss := agent(t, db, "boss", "lead")
		a, b := task(t, db, boss.ID, "developer", nil), task(t, db, boss.ID, "developer", nil)
		must(t, db.InTx(ctx, func(tx models.Tx) error {
			wb := models.NewWriteBehind(tx, tx.(models.BatchWriter))
			a.Title = "kept"
			must(t, wb.UpdateTask(ctx, a))
			must(t, wb.AppendEvent(ctx, &models.Event{Type: "test.kept", TaskID: &a.ID, CreatedAt: time.Now().UTC()}))
			m := wb.Mark()
			b.Title = "dropped"
			must(t, wb.UpdateTask(ctx, b))
			must(t, wb.CreateAttempt(ctx, &models.Attempt{TaskID: b.ID, Number: 1, AgentID: boss.ID, RunnerID: "r1"}))
			must(t, wb.AppendEvent(ctx, &models.Event{Type: "test.dropped", TaskID: &b.ID, CreatedAt: time.Now().UTC()}))
			wb.Undo(m)
			got, err := wb.GetTask(ctx, a.ID) // not served by wb: flushes first
			must(t, err)
			if got.Title != "kept" {
				t.Errorf("a read in the transaction saw title %q, not the held write", got.Title)
			}
			if wb.Held() {
				t.Error("writes still held after a read that flushes")
			}
			return nil
		}))
		if got, err := db.GetTask(ctx, b.ID); err != nil || got.Title == "dropped" {
			t.Errorf("task b after Undo: %+v, %v", got, err)
		}
		if as, err := db.ListAttempts(ctx, b.ID); err != nil || len(as) != 0 {
			t.Errorf("attempts of b after Undo: %+v, %v", as, err)
		}
		for _, c := range []struct {
			id   int64
			want string
		}{{a.ID, "test.kept"}, {b.ID, "test.dropped"}} {
			es, err := db.ListTaskEvents(ctx, c.id, 100)
			must(t, err)
			found := false
			for _, e := range es {
				found = found || e.Type == c.want
			}
			if found != (c.want == "test.kept") {
				t.Errorf("task %d: event %s stored: %v", c.id, c.want, found)
			}
		}
	})
}
