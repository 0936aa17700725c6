package store_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/models/store/storetest"
)

// slotRows returns agent's slots as "slot:task" ("slot:-" when free of a task).
func slotRows(t *testing.T, ctx context.Context, db *store.DB, agentID int64) []string {
	t.Helper()
	rows, err := db.Gorm().WithContext(ctx).Raw("SELECT slot, task_id FROM agent_slots WHERE agent_id = ? ORDER BY slot", agentID).Rows()
	must(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var slot int
		var task *int64
		must(t, rows.Scan(&slot, &task))
		if task == nil {
			out = append(out, fmt.Sprintf("%d:-", slot))
		} else {
			out = append(out, fmt.Sprintf("%d:%d", slot, *task))
		}
	}
	must(t, rows.Err())
	return out
}

// lease puts tk in progress for agent under owner's lease until until, holding a slot
// of agent's when one is free; it reports whether one was.
func lease(t testing.TB, ctx context.Context, tx models.Tx, tk *models.Task, agent int64, owner string, until time.Time) bool {
	t.Helper()
	took, err := takeSlot(ctx, tx.(models.Claimer), agent, tk.ID, owner, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !took {
		return false
	}
	tk.State, tk.AssigneeID, tk.BuilderID, tk.LeaseOwner, tk.LeaseUntil = models.TaskInProgress, &agent, &agent, owner, &until
	if err := tx.UpdateTask(ctx, tk); err != nil {
		t.Fatal(err)
	}
	return true
}

// TestSlotsFollowTheAgent: an enabled worker has one slot per unit of concurrency,
// from its creation on; lowering the concurrency or disabling the agent removes the
// free slots and keeps the taken ones until their tasks' leases end, and claims take
// no slot beyond the concurrency.
func TestSlotsFollowTheAgent(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		boss := agent(t, db, "boss", "lead")
		w := &models.Agent{Name: "w", Kind: models.KindWorker, Roles: []string{"developer"}, Command: "true", Concurrency: 2}
		must(t, db.CreateAgent(ctx, w))
		equal(t, "slots of a new worker", slotRows(t, ctx, db, w.ID), []string{"0:-", "1:-"})
		if rows := slotRows(t, ctx, db, boss.ID); len(rows) != 1 {
			t.Fatalf("boss (a worker of concurrency 1 here) has slots %v", rows)
		}
		w.Concurrency = 4
		must(t, db.UpdateAgent(ctx, w))
		var tasks []*models.Task
		for range 3 {
			tk := task(t, db, boss.ID, "developer", nil)
			if !lease(t, ctx, db, tk, w.ID, "r1", time.Now().Add(time.Minute)) {
				t.Fatal("no free slot for the first three tasks of four slots")
			}
			tasks = append(tasks, tk)
		}
		equal(t, "three taken of four", slotRows(t, ctx, db, w.ID), []string{
			fmt.Sprintf("0:%d", tasks[0].ID), fmt.Sprintf("1:%d", tasks[1].ID), fmt.Sprintf("2:%d", tasks[2].ID), "3:-"})
		w.Concurrency = 1
		must(t, db.UpdateAgent(ctx, w))
		equal(t, "lowered to one", slotRows(t, ctx, db, w.ID), []string{
			fmt.Sprintf("0:%d", tasks[0].ID), fmt.Sprintf("1:%d", tasks[1].ID), fmt.Sprintf("2:%d", tasks[2].ID)})
		// Slot 1 is free again, but beyond the concurrency: not taken, removed later.
		tasks[1].LeaseOwner, tasks[1].LeaseUntil, tasks[1].State = "", nil, models.TaskVerified
		must(t, db.UpdateTask(ctx, tasks[1]))
		if lease(t, ctx, db, task(t, db, boss.ID, "developer", nil), w.ID, "r1", time.Now().Add(time.Minute)) {
			t.Fatal("a claim took a slot beyond the agent's concurrency")
		}
		w.Disabled = true
		must(t, db.UpdateAgent(ctx, w))
		equal(t, "disabled", slotRows(t, ctx, db, w.ID), []string{fmt.Sprintf("0:%d", tasks[0].ID), fmt.Sprintf("2:%d", tasks[2].ID)})
		tasks[0].LeaseOwner, tasks[0].LeaseUntil = "", nil
		must(t, db.UpdateTask(ctx, tasks[0]))
		if lease(t, ctx, db, task(t, db, boss.ID, "developer", nil), w.ID, "r1", time.Now().Add(time.Minute)) {
			t.Fatal("a claim took a slot of a disabled agent")
		}
		w.Disabled, w.Concurrency = false, 2
		must(t, db.UpdateAgent(ctx, w))
		equal(t, "enabled again", slotRows(t, ctx, db, w.ID), []string{"0:-", "1:-", fmt.Sprintf("2:%d", tasks[2].ID)})
	})
}

// TestLeaseEndFreesItsSlot: whatever ends a task's lease (a settle writing the task,
// ReleaseLease) frees its slot; whatever extends it (RenewLeases, a settle keeping it)
// keeps the slot; a slot whose lease passed is taken by the next claim, and so is one
// whose task's lease ended while a claim held the slot's row (the trigger skipped it).
func TestLeaseEndFreesItsSlot(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		boss := agent(t, db, "boss", "lead")
		w := agent(t, db, "w", "developer")
		a, b := task(t, db, boss.ID, "developer", nil), task(t, db, boss.ID, "developer", nil)
		if !lease(t, ctx, db, a, w.ID, "r1", time.Now().Add(time.Minute)) {
			t.Fatal("no slot for the first task")
		}
		if lease(t, ctx, db, b, w.ID, "r2", time.Now().Add(time.Minute)) {
			t.Fatal("two live leases in one slot")
		}
		// The renewed lease keeps the slot: still taken after the first lease would end.
		_, err := db.RenewLeases(ctx, "r1", []int64{a.ID}, time.Now().Add(time.Hour))
		must(t, err)
		took, err := takeSlot(ctx, db, w.ID, b.ID, "r2", time.Now().Add(30*time.Minute))
		must(t, err)
		if took {
			t.Fatal("RenewLeases did not renew the slot")
		}
		// So does a settle that keeps the lease for the next attempt (a full write).
		a, err = db.GetTask(ctx, a.ID)
		must(t, err)
		later := time.Now().Add(3 * time.Hour)
		a.LeaseUntil = &later
		must(t, db.UpdateTask(ctx, a))
		took, err = takeSlot(ctx, db, w.ID, b.ID, "r2", time.Now().Add(2*time.Hour))
		must(t, err)
		if took {
			t.Fatal("a settle that kept the lease did not renew the slot")
		}
		// A settle ends the lease by writing the task: the slot is free.
		a.State, a.LeaseOwner, a.LeaseUntil = models.TaskVerified, "", nil
		must(t, db.UpdateTask(ctx, a))
		equal(t, "after the settle", slotRows(t, ctx, db, w.ID), []string{"0:-"})
		if !lease(t, ctx, db, b, w.ID, "r2", time.Now().Add(time.Minute)) {
			t.Fatal("the settled task's slot was not freed")
		}
		must(t, db.ReleaseLease(ctx, "r2", b.ID))
		equal(t, "after the release", slotRows(t, ctx, db, w.ID), []string{"0:-"})
		// A lease that passed leaves its slot free for the next claim.
		if !lease(t, ctx, db, b, w.ID, "r2", time.Now().Add(-time.Second)) {
			t.Fatal("no slot after the release")
		}
		c := task(t, db, boss.ID, "developer", nil)
		if !lease(t, ctx, db, c, w.ID, "r3", time.Now().Add(time.Minute)) {
			t.Fatal("the slot of an expired lease was not taken")
		}
		equal(t, "re-pointed", slotRows(t, ctx, db, w.ID), []string{fmt.Sprintf("0:%d", c.ID)})
	})
}

// claimAs claims, in tx, up to limit ready tasks for worker agent w as the runner
// does (WorkerLoads, ReadyTasks, a slot per task), and returns their ids.
func claimAs(t testing.TB, ctx context.Context, tx models.Tx, owner string, w int64, limit int) []int64 {
	t.Helper()
	c := tx.(models.Claimer)
	loads, err := c.WorkerLoads(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var idle bool
	for _, l := range loads {
		idle = idle || (l.Agent.ID == w && l.Running < max(l.Agent.Concurrency, 1))
	}
	if !idle {
		return nil
	}
	ready, err := c.ReadyTasks(ctx, models.ReadyQuery{Now: time.Now(), Roles: []string{"developer"}, AgentIDs: []int64{w}, Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range ready {
		if lease(t, ctx, tx, &ready[i], w, owner, time.Now().Add(time.Minute)) {
			ids = append(ids, ready[i].ID)
		}
	}
	return ids
}

// TestTwoClaimsShareOneAgentOnPostgres: while one runner's claim is open, another
// runner's claim takes other ready tasks for the same agent and commits. Locking the
// agent rows made the second claim find no agent at all: one claim at a time ran
// across the fleet.
func TestTwoClaimsShareOneAgentOnPostgres(t *testing.T) {
	db := storetest.Open(t, store.DialectPostgres)
	ctx := ctxT(t)
	boss := agent(t, db, "boss", "lead")
	w := &models.Agent{Name: "w", Kind: models.KindWorker, Roles: []string{"developer"}, Command: "true", Concurrency: 4}
	must(t, db.CreateAgent(ctx, w))
	for range 4 {
		task(t, db, boss.ID, "developer", nil)
	}
	inA, release := make(chan []int64), make(chan struct{})
	doneA := make(chan error, 1)
	go func() {
		doneA <- db.InTx(ctx, func(tx models.Tx) error {
			inA <- claimAs(t, ctx, tx, "ra", w.ID, 2)
			<-release
			return nil
		})
	}()
	a := <-inA
	var b []int64
	must(t, db.InTx(ctx, func(tx models.Tx) error {
		b = claimAs(t, ctx, tx, "rb", w.ID, 4)
		return nil
	}))
	close(release)
	must(t, <-doneA)
	if len(a) != 2 || len(b) != 2 {
		t.Fatalf("claims took %v (open) and %v (committed while the first was open), want two each", a, b)
	}
	var live int
	must(t, db.SQL().QueryRowContext(ctx, "SELECT COUNT(*) FROM tasks WHERE lease_owner <> '' AND lease_until > now()").Scan(&live))
	if live != 4 {
		t.Fatalf("%d live leases, want 4", live)
	}
}

// TestConcurrencyNeverExceededOnPostgres: runners claiming side by side for one agent
// of concurrency k, their tasks ending after a moment, never hold more than k live
// leases between them, and do reach k. Again without the trigger that clears a slot
// when its lease ends: every slot is then found free through its task's ended lease
// (the pick that locks the task row).
func TestConcurrencyNeverExceededOnPostgres(t *testing.T) {
	for _, trigger := range []bool{true, false} {
		t.Run(fmt.Sprintf("trigger=%v", trigger), func(t *testing.T) {
			t.Parallel()
			claimSideBySide(t, trigger)
		})
	}
}

func claimSideBySide(t *testing.T, trigger bool) {
	const k, runners, tasks = 3, 6, 120
	db := storetest.Open(t, store.DialectPostgres)
	ctx := ctxT(t)
	if !trigger {
		must(t, db.Gorm().WithContext(ctx).Exec("DROP TRIGGER tasks_lease_ended ON tasks").Error)
	}
	boss := agent(t, db, "boss", "lead")
	w := &models.Agent{Name: "w", Kind: models.KindWorker, Roles: []string{"developer"}, Command: "true", Concurrency: k}
	must(t, db.CreateAgent(ctx, w))
	for range tasks {
		task(t, db, boss.ID, "developer", nil)
	}
	var peak, done atomic.Int64
	stop := make(chan struct{})
	checked := make(chan error, 1)
	go func() {
		var err error
		for done.Load() < tasks && err == nil {
			var n int64
			err = db.SQL().QueryRowContext(ctx, "SELECT COUNT(*) FROM tasks WHERE state = 'in_progress' AND lease_owner <> '' AND lease_until > now()").Scan(&n)
			if n > peak.Load() {
				peak.Store(n)
			}
		}
		close(stop)
		checked <- err
	}()
	var wg sync.WaitGroup
	for r := range runners {
		wg.Go(func() {
			owner := fmt.Sprintf("r%d", r)
			for {
				select {
				case <-stop:
					return
				default:
				}
				var ids []int64
				if err := db.InTx(ctx, func(tx models.Tx) error { ids = claimAs(t, ctx, tx, owner, w.ID, 2); return nil }); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(2 * time.Millisecond)
				for _, id := range ids {
					tk, err := db.GetTask(ctx, id)
					if err == nil {
						tk.State, tk.LeaseOwner, tk.LeaseUntil = models.TaskVerified, "", nil
						err = db.UpdateTask(ctx, tk)
					}
					if err != nil {
						t.Error(err)
						return
					}
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	must(t, <-checked)
	if p := peak.Load(); p != k {
		t.Fatalf("peak live leases %d, want %d (the concurrency), no more", p, k)
	}
}

// TestMigration25BackfillsSlots: upgrading gives every enabled worker its slots, the
// tasks leased at the time keep theirs (a disabled agent's too, until they end), and a
// human none; the trigger then frees a slot when its lease ends.
func TestMigration25BackfillsSlots(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			db, err := store.Open(ctx, storetest.Empty(t, dialect))
			must(t, err)
			defer db.Close()
			must(t, db.MigrateTo(ctx, 24))
			id := func(q string, args ...any) int64 {
				var v int64
				must(t, db.SQL().QueryRowContext(ctx, q, args...).Scan(&v))
				return v
			}
			w := id("INSERT INTO agents (name, kind, concurrency) VALUES ('w', 'worker', 3) RETURNING id")
			off := id("INSERT INTO agents (name, kind, concurrency, disabled) VALUES ('off', 'worker', 2, TRUE) RETURNING id")
			h := id("INSERT INTO agents (name, kind) VALUES ('h', 'human') RETURNING id")
			leased := func(agent int64, owner string) int64 {
				return id(`INSERT INTO tasks (title, role, state, assignee_id, builder_id, lease_owner, lease_until)
					VALUES ('t', 'dev', 'in_progress', $1, $1, $2, $3) RETURNING id`, agent, owner, time.Now().Add(time.Minute).UTC())
			}
			tw, toff := leased(w, "r1"), leased(off, "r2")
			leased(h, "") // a person's task in progress: no lease, no slot
			must(t, db.Migrate(ctx))
			equal(t, "w's slots", slotRows(t, ctx, db, w), []string{fmt.Sprintf("0:%d", tw), "1:-", "2:-"})
			equal(t, "off's slots", slotRows(t, ctx, db, off), []string{fmt.Sprintf("0:%d", toff)})
			if rows := slotRows(t, ctx, db, h); len(rows) != 0 {
				t.Fatalf("a person has slots %v", rows)
			}
			must(t, db.ReleaseLease(ctx, "r1", tw))
			equal(t, "w's slots after the release", slotRows(t, ctx, db, w), []string{"0:-", "1:-", "2:-"})
		})
	}
}

// TestSlotKeptByALockIsFreeOnPostgres: a task's lease ends while another transaction
// holds its slot's row (as a claim's SKIP LOCKED pick can, having rechecked the row and
// found it taken), so the trigger leaves the slot naming the task; the next claim
// takes it all the same, since the task no longer holds the lease.
func TestSlotKeptByALockIsFreeOnPostgres(t *testing.T) {
	db := storetest.Open(t, store.DialectPostgres)
	ctx := ctxT(t)
	boss := agent(t, db, "boss", "lead")
	w := agent(t, db, "w", "developer")
	a, b := task(t, db, boss.ID, "developer", nil), task(t, db, boss.ID, "developer", nil)
	if !lease(t, ctx, db, a, w.ID, "r1", time.Now().Add(time.Minute)) {
		t.Fatal("no slot for the first task")
	}
	locked, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- db.InTx(ctx, func(tx models.Tx) error {
			var n int
			err := tx.(interface{ GormTx() *gorm.DB }).GormTx().WithContext(ctx).
				Raw("SELECT slot FROM agent_slots WHERE agent_id = ? FOR UPDATE", w.ID).Scan(&n).Error
			close(locked)
			<-release
			return err
		})
	}()
	<-locked
	a.State, a.LeaseOwner, a.LeaseUntil = models.TaskVerified, "", nil
	must(t, db.UpdateTask(ctx, a))
	close(release)
	must(t, <-done)
	equal(t, "the slot the trigger had to leave", slotRows(t, ctx, db, w.ID), []string{fmt.Sprintf("0:%d", a.ID)})
	if !lease(t, ctx, db, b, w.ID, "r2", time.Now().Add(time.Minute)) {
		t.Fatal("the slot of a task whose lease ended was not taken")
	}
	equal(t, "re-pointed", slotRows(t, ctx, db, w.ID), []string{fmt.Sprintf("0:%d", b.ID)})
}

// takeSlot gives task a free slot of agent for owner as a claim does (LockFreeSlots,
// then AssignSlots) and reports whether there was one.
func takeSlot(ctx context.Context, c models.Claimer, agent, task int64, owner string, now time.Time) (bool, error) {
	free, err := c.LockFreeSlots(ctx, map[int64]int{agent: 1}, now)
	if err != nil || len(free[agent]) == 0 {
		return false, err
	}
	return true, c.AssignSlots(ctx, owner, []models.SlotTake{{AgentID: agent, Slot: free[agent][0], TaskID: task}})
}
