package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/procs"
)

// orphan puts task id in progress for dev under owner's lease until until, with a
// running first attempt, as a runner that died mid-attempt leaves it.
func (h *harness) orphan(id, dev int64, owner string, until time.Time) {
	h.t.Helper()
	must(h.t, h.db.InTx(h.ctx, func(tx models.Tx) error {
		tk, err := tx.LockTask(h.ctx, id)
		if err != nil {
			return err
		}
		tk.State, tk.AssigneeID, tk.BuilderID, tk.LeaseOwner, tk.LeaseUntil = models.TaskInProgress, &dev, &dev, owner, &until
		if err := tx.UpdateTask(h.ctx, tk); err != nil {
			return err
		}
		return tx.CreateAttempt(h.ctx, &models.Attempt{TaskID: id, Number: 1, AgentID: dev, RunnerID: owner, Outcome: models.OutcomeRunning})
	}))
}

// beatAs records an instance of runnerID alive until until.
func (h *harness) beatAs(runnerID, instance, owner string, until time.Time) {
	h.t.Helper()
	host, _ := os.Hostname()
	must(h.t, h.db.BeatRunner(h.ctx, models.RunnerInstance{RunnerID: runnerID, Instance: instance, Host: host, Owner: owner,
		AliveUntil: until, StartedAt: time.Now().Add(-time.Minute)}))
}

// takenOverWithin waits up to d for task id's second attempt, and checks that the
// first was recorded as the infrastructure failure of owner.
func (h *harness) takenOverWithin(id int64, owner string, d time.Duration) {
	h.t.Helper()
	start := time.Now()
	h.waitLong(d, "the takeover", func() bool { return len(h.attempts(id)) >= 2 })
	atts := h.attempts(id)
	if atts[0].Outcome != models.OutcomeInfra || !strings.Contains(atts[0].Diagnosis, `"`+owner+`" stopped renewing its lease`) {
		h.t.Fatalf("first attempt %+v", atts[0])
	}
	h.t.Logf("taken over %v after the pool started", time.Since(start).Round(time.Millisecond))
	if got := h.wait(id, models.TaskVerified); got.AttemptsUsed != 0 {
		h.t.Errorf("the takeover used %d attempts", got.AttemptsUsed)
	}
}

// leaseOf returns task id's lease.
func (h *harness) leaseOf(id int64) (string, time.Time) {
	h.t.Helper()
	tk, err := h.db.GetTask(h.ctx, id)
	must(h.t, err)
	if tk.LeaseUntil == nil {
		return tk.LeaseOwner, time.Time{}
	}
	return tk.LeaseOwner, *tk.LeaseUntil
}

// TestTakeoverByRestartedRunner: a runner restarted under the same id, whose earlier
// process is proven dead by its unlocked procs owner lock, takes back that process's
// task at once, not when its lease (29 s left) expires; the dead attempt is an
// infrastructure failure that uses no attempt.
func TestTakeoverByRestartedRunner(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			h, dev := restartedRunner(t, d)
			task := h.task("orphan", "developer", fileContract(), func(s *models.TaskSpec) { s.Assignee = "dev" })
			h.orphan(task.ID, dev.ID, "r1", time.Now().Add(29*time.Second))
			h.start()
			h.takenOverWithin(task.ID, "r1", 5*time.Second)
		})
	}
}

// restartedRunner is the harness of runner "r1" (30 s lease) restarted after its
// earlier process died: that process's owner lock file is left unlocked by its death,
// while its row still looks alive for a long while. It has one worker, dev.
func restartedRunner(t *testing.T, dialect string) (*harness, *models.Agent) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "procs")
	reg, err := procs.Open(dir)
	must(t, err)
	t.Cleanup(func() { reg.Close() })
	h := newHarness(t, dialect, func(c *Config) { c.Lease, c.RunnerID, c.Procs = 30*time.Second, "r1", reg })
	dev := h.worker("dev", "developer", script(t, "ok.sh"))
	dead := filepath.Join(dir, "owner-999999-00000000deadbeef.lock")
	must(t, os.WriteFile(dead, nil, 0o600))
	h.beatAs("r1", "old", dead, time.Now().Add(time.Hour))
	return h, dev
}

// TestTakeoverOfALeaseThatLandsLate: a claim the dead process sent just before it
// died can commit after its successor's first reclaim; the successor still takes that
// task back within a few beats, not when its lease expires.
func TestTakeoverOfALeaseThatLandsLate(t *testing.T) {
	h, dev := restartedRunner(t, "sqlite")
	first := h.task("orphan", "developer", fileContract(), func(s *models.TaskSpec) { s.Assignee = "dev" })
	h.orphan(first.ID, dev.ID, "r1", time.Now().Add(29*time.Second))
	// Assigned to an agent then disabled, so that nothing claims it before it is
	// orphaned.
	off := h.worker("off", "developer", script(t, "ok.sh"))
	late := h.task("late", "developer", fileContract(), func(s *models.TaskSpec) { s.Assignee = "off" })
	off.Disabled = true
	must(t, h.db.UpdateAgent(h.ctx, off))
	h.start()
	h.takenOverWithin(first.ID, "r1", 5*time.Second) // the first reclaim has run
	// The dead process's claim of the second task commits only now.
	h.orphan(late.ID, dev.ID, "r1", time.Now().Add(25*time.Second))
	h.takenOverWithin(late.ID, "r1", 5*time.Second)
}

// TestTakeoverSpareLiveTwin: a process started under the id of a live one (its owner
// lock held, its row alive) takes none of the live one's leases, and no other runner
// does either; once the twin falls silent, the newcomer takes its leases back at its
// next beat.
func TestTakeoverSpareLiveTwin(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "procs")
			reg, err := procs.Open(dir)
			must(t, err)
			t.Cleanup(func() { reg.Close() })
			twin, err := procs.Open(dir) // the live twin's registry: its lock is held
			must(t, err)
			t.Cleanup(func() { twin.Close() })
			h := newHarness(t, d, func(c *Config) { c.Lease, c.RunnerID, c.Procs = 30*time.Second, "r1", reg })
			dev := h.worker("dev", "developer", script(t, "ok.sh"))
			task := h.task("twin's", "developer", fileContract(), func(s *models.TaskSpec) { s.Assignee = "dev" })
			until := time.Now().Add(29 * time.Second).UTC().Truncate(time.Microsecond)
			h.orphan(task.ID, dev.ID, "r1", until)
			h.beatAs("r1", "twin", twin.OwnerPath(), time.Now().Add(time.Hour))
			h.start()
			time.Sleep(3 * time.Second) // three beats
			if owner, got := h.leaseOf(task.ID); owner != "r1" || !got.Equal(until) {
				t.Fatalf("the live twin's lease became %s until %v (was r1 until %v)", owner, got, until)
			}
			if atts := h.attempts(task.ID); len(atts) != 1 || atts[0].Outcome != models.OutcomeRunning {
				t.Fatalf("attempts %+v", atts)
			}
			h.beatAs("r1", "twin", twin.OwnerPath(), time.Now()) // the twin falls silent
			h.takenOverWithin(task.ID, "r1", 5*time.Second)
		})
	}
}

// TestTakeoverOfSilentRunner: another runner's tasks are taken over once all of its
// instances are silent, within a beat, not when the lease expires; a runner that
// still beats keeps its lease, and so does an owner without any recorded instance.
func TestTakeoverOfSilentRunner(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, d, func(c *Config) { c.Lease = 30 * time.Second })
			dev := h.worker("dev", "developer", script(t, "ok.sh"), func(a *models.Agent) { a.Concurrency = 3 })
			until := time.Now().Add(29 * time.Second).UTC().Truncate(time.Microsecond)
			ids := map[string]int64{}
			for _, owner := range []string{"silent", "alive", "ghost"} {
				task := h.task(owner+"'s", "developer", fileContract(), func(s *models.TaskSpec) { s.Assignee = "dev" })
				h.orphan(task.ID, dev.ID, owner, until)
				ids[owner] = task.ID
			}
			h.beatAs("silent", "a", "", time.Now().Add(-time.Hour))
			h.beatAs("silent", "b", "", time.Now().Add(-time.Second))
			h.beatAs("alive", "a", "", time.Now().Add(-time.Second))
			h.beatAs("alive", "b", "", time.Now().Add(time.Hour))
			h.start()
			h.takenOverWithin(ids["silent"], "silent", 5*time.Second)
			for _, owner := range []string{"alive", "ghost"} {
				if o, got := h.leaseOf(ids[owner]); o != owner || !got.Equal(until) {
					t.Errorf("%s's lease became %s until %v", owner, o, got)
				}
			}
		})
	}
}
