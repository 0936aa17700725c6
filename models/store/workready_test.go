package store_test

import (
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
)

// Work-ready wake-ups come only from commits that may have made work claimable: a
// task created (not one a claim assigned and started in the same transaction), a
// verified task that another depends on (not one nothing depends on), an agent
// changed, an attempt that let its lease go; never from a log event.
func TestWorkReadyOnlyForClaimableWork(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		work := db.SubscribeWork(ctx)
		heard := func(wait time.Duration) bool {
			select {
			case <-work:
				return true
			case <-time.After(wait):
				return false
			}
		}
		heard(2 * time.Second) // PostgreSQL: the listener announces work once it listens
		var a *models.Agent
		var lone, dep *models.Task
		must(t, db.InTx(ctx, func(tx models.Tx) error {
			a = agent(t, tx, "dev", "developer")
			lone = task(t, tx, a.ID, "developer", nil)
			dep = task(t, tx, a.ID, "developer", nil)
			task(t, tx, a.ID, "developer", nil, dep.ID) // depends on dep
			return nil
		}))
		heard(300 * time.Millisecond)
		cases := []struct {
			name   string
			events []*models.Event
			want   bool
		}{
			{"a claim: assigned then started", []*models.Event{{Type: "task.assigned", TaskID: &lone.ID}, {Type: "task.started", TaskID: &lone.ID}}, false},
			{"a log line", []*models.Event{{Type: "attempt.log", TaskID: &lone.ID}}, false},
			{"an attempt that passed", []*models.Event{{Type: "attempt.finished", TaskID: &lone.ID, Data: []byte(`{"outcome":"passed"}`)}}, false},
			{"verified, nothing depends on it", []*models.Event{{Type: "task.verified", TaskID: &lone.ID}}, false},
			{"a task created", []*models.Event{{Type: "task.created", TaskID: &lone.ID}}, true},
			{"verified, a task depends on it", []*models.Event{{Type: "task.verified", TaskID: &dep.ID}}, true},
			{"an agent changed", []*models.Event{{Type: models.AgentChangedEvent, AgentID: &a.ID}}, true},
			{"an attempt that let its lease go", []*models.Event{{Type: "attempt.finished", TaskID: &lone.ID, Data: []byte(`{"outcome":"infrastructure"}`)}}, true},
		}
		for _, c := range cases {
			must(t, db.InTx(ctx, func(tx models.Tx) error { return tx.AppendEvents(ctx, c.events) }))
			wait := 300 * time.Millisecond
			if c.want {
				wait = 5 * time.Second
			}
			if got := heard(wait); got != c.want {
				t.Errorf("%s: work-ready heard %v, want %v", c.name, got, c.want)
			}
		}
	})
}

// Only one holder of the claim turn at a time on PostgreSQL; let go, it is announced
// free and can be taken again. SQLite (one process) has no turn to hold.
func TestClaimTurnIsExclusive(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		release, ok, err := db.ClaimTurn(ctx)
		must(t, err)
		if db.Dialect() != store.DialectPostgres {
			if !ok || release != nil {
				t.Fatalf("SQLite ClaimTurn: ok %v, release %v; want true, nil", ok, release != nil)
			}
			return
		}
		if !ok {
			t.Fatal("first ClaimTurn refused")
		}
		turns := db.SubscribeTurns(ctx)
		select { // the listener announces a turn free once it listens
		case <-turns:
		case <-time.After(5 * time.Second):
		}
		_, again, err := db.ClaimTurn(ctx)
		must(t, err)
		if again {
			t.Fatal("second ClaimTurn granted while the turn is held")
		}
		release()
		select {
		case <-turns:
		case <-time.After(5 * time.Second):
			t.Fatal("the turn let go was not announced")
		}
		r2, ok, err := db.ClaimTurn(ctx)
		must(t, err)
		if !ok {
			t.Fatal("ClaimTurn refused after release")
		}
		r2()
	})
}
