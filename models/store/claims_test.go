package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/models/store/storetest"
)

// claimEach runs fn on a fresh store of every dialect, in parallel.
func claimEach(t *testing.T, fn func(t *testing.T, ctx context.Context, db *store.DB)) {
	t.Helper()
	for _, d := range storetest.Dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			t.Cleanup(cancel)
			fn(t, ctx, storetest.Open(t, d))
		})
	}
}

func claimMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// claimFixture holds two workers (dev with concurrency 2, rev), a human and tasks in
// every situation ReadyTasks must tell apart.
type claimFixture struct {
	dev, rev, human models.Agent
	tasks           map[string]int64
}

func newClaimFixture(t *testing.T, ctx context.Context, db *store.DB) *claimFixture {
	t.Helper()
	f := &claimFixture{tasks: map[string]int64{}}
	mk := func(a *models.Agent) {
		a.Normalize()
		claimMust(t, db.CreateAgent(ctx, a))
	}
	f.dev = models.Agent{Name: "dev", Kind: models.KindWorker, Roles: []string{"developer"}, Command: "true", Concurrency: 2}
	f.rev = models.Agent{Name: "rev", Kind: models.KindWorker, Roles: []string{"reviewer"}, Command: "true"}
	f.human = models.Agent{Name: "ann", Kind: models.KindHuman, Roles: []string{"developer", "lead"}}
	off := models.Agent{Name: "off", Kind: models.KindWorker, Roles: []string{"developer"}, Command: "true", Disabled: true}
	mk(&f.dev)
	mk(&f.rev)
	mk(&f.human)
	mk(&off)

	now := time.Now()
	past, future := now.Add(-time.Minute), now.Add(time.Minute)
	task := func(name string, mut func(*models.Task)) {
		tk := &models.Task{Title: name, Role: "developer", State: models.TaskPending, CreatorID: f.human.ID}
		if mut != nil {
			mut(tk)
		}
		claimMust(t, db.CreateTask(ctx, tk))
		f.tasks[name] = tk.ID
	}
	task("pending", nil)
	task("pending-reviewer", func(tk *models.Task) { tk.Role = "reviewer" })
	task("pending-ba", func(tk *models.Task) { tk.Role = "ba" })
	task("assigned-dev", func(tk *models.Task) { tk.State, tk.AssigneeID = models.TaskAssigned, &f.dev.ID })
	task("assigned-human", func(tk *models.Task) { tk.State, tk.AssigneeID = models.TaskAssigned, &f.human.ID })
	task("running", func(tk *models.Task) {
		tk.State, tk.AssigneeID, tk.BuilderID = models.TaskInProgress, &f.dev.ID, &f.dev.ID
		tk.LeaseOwner, tk.LeaseUntil = "r1", &future
	})
	task("expired", func(tk *models.Task) {
		tk.State, tk.AssigneeID, tk.BuilderID = models.TaskInProgress, &f.dev.ID, &f.dev.ID
		tk.LeaseOwner, tk.LeaseUntil = "dead", &past
	})
	task("rejected", func(tk *models.Task) {
		tk.State, tk.AssigneeID, tk.BuilderID = models.TaskInProgress, &f.dev.ID, &f.dev.ID
	})
	task("human-building", func(tk *models.Task) {
		tk.State, tk.AssigneeID, tk.BuilderID = models.TaskInProgress, &f.human.ID, &f.human.ID
	})
	task("waiting", func(tk *models.Task) { tk.DependsOn = []int64{f.tasks["pending"]} })
	task("verified", func(tk *models.Task) { tk.State = models.TaskVerified })
	task("released", func(tk *models.Task) { tk.DependsOn = []int64{f.tasks["verified"]} })
	task("urgent", func(tk *models.Task) { tk.Priority = 5 })
	// The leases hold slots of dev's, as a claim's would: the live one a busy slot,
	// the expired one (of another runner than the slot's) a slot free again.
	for _, name := range []string{"running", "expired"} {
		took, err := takeSlot(ctx, db, f.dev.ID, f.tasks[name], "r1", now)
		claimMust(t, err)
		if !took {
			t.Fatalf("no slot of dev's for %s", name)
		}
	}
	return f
}

func (f *claimFixture) names(ts []models.Task) []string {
	byID := map[int64]string{}
	for n, id := range f.tasks {
		byID[id] = n
	}
	var out []string
	for _, tk := range ts {
		out = append(out, byID[tk.ID])
	}
	return out
}

func TestWorkerLoadsCountBusySlots(t *testing.T) {
	claimEach(t, func(t *testing.T, ctx context.Context, db *store.DB) {
		f := newClaimFixture(t, ctx, db)
		loads, err := db.WorkerLoads(ctx, time.Now())
		claimMust(t, err)
		got := map[string]int{}
		for _, l := range loads {
			got[l.Agent.Name] = l.Running
		}
		// The disabled worker and the human are not workers the runner may use; the
		// expired lease does not count.
		want := map[string]int{"dev": 1, "rev": 0}
		if len(got) != len(want) || got["dev"] != 1 || got["rev"] != 0 {
			t.Fatalf("loads = %v, want %v", got, want)
		}
		_ = f
	})
}

func TestReadyTasks(t *testing.T) {
	claimEach(t, func(t *testing.T, ctx context.Context, db *store.DB) {
		f := newClaimFixture(t, ctx, db)
		got, err := db.ReadyTasks(ctx, models.ReadyQuery{Now: time.Now(), Roles: []string{"developer", "reviewer"}, AgentIDs: []int64{f.dev.ID, f.rev.ID}})
		claimMust(t, err)
		want := []string{"urgent", "pending", "pending-reviewer", "assigned-dev", "expired", "rejected", "released"}
		if n := f.names(got); !slices.Equal(n, want) {
			t.Fatalf("ready = %v, want %v", n, want)
		}
		// Only the reviewer idle: only its work.
		got, err = db.ReadyTasks(ctx, models.ReadyQuery{Now: time.Now(), Roles: []string{"reviewer"}, AgentIDs: []int64{f.rev.ID}})
		claimMust(t, err)
		if n := f.names(got); !slices.Equal(n, []string{"pending-reviewer"}) {
			t.Fatalf("ready for rev = %v", n)
		}
		// Exclude and limit.
		got, err = db.ReadyTasks(ctx, models.ReadyQuery{Now: time.Now(), Roles: []string{"developer"}, AgentIDs: []int64{f.dev.ID},
			Exclude: []int64{f.tasks["urgent"]}, Limit: 2})
		claimMust(t, err)
		if n := f.names(got); !slices.Equal(n, []string{"pending", "assigned-dev"}) {
			t.Fatalf("ready with exclude/limit = %v", n)
		}
		got, err = db.ReadyTasks(ctx, models.ReadyQuery{Now: time.Now()})
		claimMust(t, err)
		if len(got) != 0 {
			t.Fatalf("nobody idle: %v", f.names(got))
		}
	})
}

func TestReadyTasksSkipsLockedRowsOnPostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := storetest.Open(t, store.DialectPostgres)
	f := newClaimFixture(t, ctx, db)
	q := models.ReadyQuery{Now: time.Now(), Roles: []string{"developer"}, AgentIDs: []int64{f.dev.ID}, Limit: 1}
	inFirst := make(chan int64)
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- db.InTx(ctx, func(tx models.Tx) error {
			c := tx.(models.Claimer)
			ts, err := c.ReadyTasks(ctx, q)
			if err != nil || len(ts) != 1 {
				close(inFirst)
				return err
			}
			took, err := takeSlot(ctx, c, f.dev.ID, ts[0].ID, "r2", time.Now())
			if err != nil || !took {
				close(inFirst)
				return err
			}
			inFirst <- ts[0].ID
			<-release
			return nil
		})
	}()
	first, ok := <-inFirst
	if !ok {
		t.Fatal("first claim found nothing")
	}
	// While the first transaction holds its task and dev's last free slot, a second
	// one gets the next task, sees every agent (none is locked) and finds no slot of
	// dev's, at once, instead of waiting.
	claimMust(t, db.InTx(ctx, func(tx models.Tx) error {
		c := tx.(models.Claimer)
		ts, err := c.ReadyTasks(ctx, q)
		if err != nil {
			return err
		}
		if len(ts) != 1 || ts[0].ID == first {
			t.Errorf("second claim got %v, first holds %d", f.names(ts), first)
		}
		loads, err := c.WorkerLoads(ctx, time.Now())
		if err != nil {
			return err
		}
		if len(loads) != 2 {
			t.Errorf("second claim sees %d agents, want 2", len(loads))
		}
		took, err := takeSlot(ctx, c, f.dev.ID, ts[0].ID, "r3", time.Now())
		if err != nil {
			return err
		}
		if took {
			t.Errorf("second claim took a slot of dev's: only one was free, and the first holds it")
		}
		return nil
	}))
	close(release)
	claimMust(t, <-done)
}

func TestRenewAndReleaseLeases(t *testing.T) {
	claimEach(t, func(t *testing.T, ctx context.Context, db *store.DB) {
		f := newClaimFixture(t, ctx, db)
		running, expired, pending := f.tasks["running"], f.tasks["expired"], f.tasks["pending"]
		until := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
		kept, err := db.RenewLeases(ctx, "r1", []int64{running, expired, pending}, until)
		claimMust(t, err)
		if !slices.Equal(kept, []int64{running}) {
			t.Fatalf("kept = %v, want [%d]", kept, running)
		}
		tk, err := db.GetTask(ctx, running)
		claimMust(t, err)
		if tk.LeaseUntil == nil || !tk.LeaseUntil.Equal(until) {
			t.Fatalf("lease_until = %v, want %v", tk.LeaseUntil, until)
		}
		kept, err = db.RenewLeases(ctx, "r1", nil, until)
		claimMust(t, err)
		if len(kept) != 0 {
			t.Fatalf("renewing nothing kept %v", kept)
		}
		// Someone else's release does nothing; the owner's clears the lease.
		claimMust(t, db.ReleaseLease(ctx, "other", running))
		tk, _ = db.GetTask(ctx, running)
		if tk.LeaseOwner != "r1" {
			t.Fatalf("lease released by a stranger: %+v", tk.LeaseOwner)
		}
		claimMust(t, db.ReleaseLease(ctx, "r1", running))
		tk, _ = db.GetTask(ctx, running)
		if tk.LeaseOwner != "" || tk.LeaseUntil != nil || tk.State != models.TaskInProgress {
			t.Fatalf("after release: owner %q until %v state %s", tk.LeaseOwner, tk.LeaseUntil, tk.State)
		}
	})
}

// TestReadyTasksWalkTheReadyIndex: with a backlog of thousands of tasks, a claim's
// query walks tasks_ready_idx in priority order instead of sorting every candidate.
// On SQLite this holds only while ReadyTasks repeats the index's WHERE term with the
// same literals.
func TestReadyTasksWalkTheReadyIndex(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		boss := agent(t, db, "boss", "lead")
		w := agent(t, db, "w", "developer")
		must(t, db.Gorm().WithContext(ctx).Exec(`WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM g WHERE n < 5000)
			INSERT INTO tasks (title, role, state, creator_id, created_at, updated_at)
			SELECT 'backlog', 'developer', CASE WHEN n % 10 = 0 THEN 'pending' ELSE 'verified' END, ?, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP FROM g`, boss.ID).Error)
		// On SQLite before statistics exist (a new database, a burst of tasks) too;
		// PostgreSQL's autovacuum gathers them soon after a burst.
		for _, analyze := range []bool{db.Dialect() == store.DialectPostgres, true} {
			if analyze {
				must(t, db.Gorm().WithContext(ctx).Exec("ANALYZE").Error)
			}
			plan, err := db.ReadyPlan(ctx, models.ReadyQuery{Now: time.Now(), Roles: []string{"developer"}, AgentIDs: []int64{w.ID}, Limit: 16})
			must(t, err)
			if !strings.Contains(plan, "tasks_ready_idx") || strings.Contains(plan, "TEMP B-TREE") {
				t.Fatalf("analyzed %v: the claim query does not walk tasks_ready_idx in order:\n%s", analyze, plan)
			}
		}
		got, err := db.ReadyTasks(ctx, models.ReadyQuery{Now: time.Now(), Roles: []string{"developer"}, AgentIDs: []int64{w.ID}, Limit: 16})
		must(t, err)
		if len(got) != 16 || got[0].State != models.TaskPending {
			t.Fatalf("ReadyTasks returned %d tasks (first %+v), want 16 pending", len(got), got[0])
		}
	})
}
