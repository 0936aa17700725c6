package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
)

// leasedTask creates a task in progress under owner's lease until until.
func leasedTask(t *testing.T, ctx context.Context, db *store.DB, owner string, until time.Time) int64 {
	t.Helper()
	a := &models.Agent{Name: fmt.Sprintf("dev-%s-%d", owner, time.Now().UnixNano()), Kind: models.KindWorker, Roles: []string{"developer"}, Command: "true"}
	a.Normalize()
	claimMust(t, db.CreateAgent(ctx, a))
	tk := &models.Task{Title: owner, Role: "developer", State: models.TaskInProgress, CreatorID: a.ID,
		AssigneeID: &a.ID, BuilderID: &a.ID, LeaseOwner: owner, LeaseUntil: &until}
	claimMust(t, db.CreateTask(ctx, tk))
	return tk.ID
}

func leaseUntil(t *testing.T, ctx context.Context, db *store.DB, id int64) time.Time {
	t.Helper()
	tk, err := db.GetTask(ctx, id)
	claimMust(t, err)
	return *tk.LeaseUntil
}

// TestExpireSilentLeases: the leases of a runner whose every instance is silent end
// as of now; a runner with one instance alive, and an owner without any recorded
// instance, keep theirs. A beat refreshes an instance's row.
func TestExpireSilentLeases(t *testing.T) {
	claimEach(t, func(t *testing.T, ctx context.Context, db *store.DB) {
		now := time.Now().UTC().Truncate(time.Microsecond)
		until := now.Add(time.Minute)
		silent := leasedTask(t, ctx, db, "silent", until)
		alive := leasedTask(t, ctx, db, "alive", until)
		ghost := leasedTask(t, ctx, db, "ghost", until)
		beat := func(id, inst string, d time.Duration) {
			claimMust(t, db.BeatRunner(ctx, models.RunnerInstance{RunnerID: id, Instance: inst, AliveUntil: now.Add(d), StartedAt: now}))
		}
		beat("silent", "a", -time.Hour)
		beat("silent", "b", time.Hour)
		beat("silent", "b", -time.Second) // the later beat is what counts
		beat("alive", "a", -time.Hour)
		beat("alive", "b", time.Hour)
		n, err := db.ExpireSilentLeases(ctx, now)
		claimMust(t, err)
		if n != 1 {
			t.Errorf("ended %d leases, want 1", n)
		}
		if got := leaseUntil(t, ctx, db, silent); !got.Equal(now) {
			t.Errorf("silent runner's lease until %v, want %v", got, now)
		}
		for _, id := range []int64{alive, ghost} {
			if got := leaseUntil(t, ctx, db, id); !got.Equal(until) {
				t.Errorf("task %d's lease until %v, want %v", id, got, until)
			}
		}
		insts, err := db.RunnerInstances(ctx, "silent")
		claimMust(t, err)
		if len(insts) != 2 || insts[1].Instance != "b" || !insts[1].AliveUntil.Equal(now.Add(-time.Second)) {
			t.Errorf("instances %+v", insts)
		}
		claimMust(t, db.ForgetRunnerInstances(ctx, "silent", []string{"b"}, now.Add(-time.Minute)))
		for id, want := range map[string]int{"silent": 0, "alive": 1} {
			if insts, err := db.RunnerInstances(ctx, id); err != nil || len(insts) != want {
				t.Errorf("%s: %d instances after forgetting, want %d (%v)", id, len(insts), want, err)
			}
		}
	})
}

// TestExpireOwnLeases: a restarted runner ends its own leases up to notAfter, but not
// those in keep, nor later ones (a live process of the id took them since), nor
// another owner's.
func TestExpireOwnLeases(t *testing.T) {
	claimEach(t, func(t *testing.T, ctx context.Context, db *store.DB) {
		now := time.Now().UTC().Truncate(time.Microsecond)
		old := leasedTask(t, ctx, db, "r1", now.Add(10*time.Second))
		kept := leasedTask(t, ctx, db, "r1", now.Add(10*time.Second))
		late := leasedTask(t, ctx, db, "r1", now.Add(40*time.Second))
		other := leasedTask(t, ctx, db, "r2", now.Add(10*time.Second))
		n, err := db.ExpireOwnLeases(ctx, "r1", now.Add(30*time.Second), now, []int64{kept})
		claimMust(t, err)
		if n != 1 || !leaseUntil(t, ctx, db, old).Equal(now) {
			t.Errorf("ended %d, old lease until %v", n, leaseUntil(t, ctx, db, old))
		}
		for _, id := range []int64{kept, late, other} {
			if leaseUntil(t, ctx, db, id).Equal(now) {
				t.Errorf("task %d's lease was ended", id)
			}
		}
	})
}
