package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/runner/ledger"
	"github.com/countersign/countersign/runner/workspace"
)

// wakePools starts n pools on the PostgreSQL database at url, each with a store of its
// own (its own LISTEN connection, as separate runner processes have), polling only
// once a minute so that every claim the tests see was woken by something else.
func wakePools(t testing.TB, ctx context.Context, url string, n int, mut ...func(*Config)) []*Pool {
	return startPools(t, ctx, url, n, false, mut...)
}

// startPools is wakePools; before starts them as they were before work-ready
// wake-ups and batched settles (woken by every other writer's commit, one settle
// transaction per attempt).
func startPools(t testing.TB, ctx context.Context, url string, n int, before bool, mut ...func(*Config)) []*Pool {
	t.Helper()
	pools := make([]*Pool, n)
	for i := range pools {
		db, err := store.Open(ctx, store.Config{DatabaseURL: url})
		must(t, err)
		t.Cleanup(func() { db.Close() })
		ws, err := workspace.New(filepath.Join(t.TempDir(), "work"))
		must(t, err)
		cfg := testCfg()
		cfg.RunnerID, cfg.Poll = fmt.Sprintf("pool-%d", i), time.Minute
		cfg.Service, cfg.Workspaces = models.NewService(db, ledger.Composer{}), ws
		if !testing.Verbose() {
			cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
		}
		for _, m := range mut {
			m(&cfg)
		}
		p, err := New(cfg)
		must(t, err)
		if before {
			p.claims.everyCommit = true
			p.run.settling.batches.g.window, p.run.settling.batches.g.max = 0, 1
		}
		must(t, p.Start(ctx))
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := p.Stop(sctx); err != nil {
				t.Errorf("stop: %v", err)
			}
		})
		pools[i] = p
	}
	// Each claims once at Start; wait for those claims to be over.
	deadline := time.Now().Add(10 * time.Second)
	for claims(pools) < int64(n) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	return pools
}

// claims counts the claim transactions the pools began.
func claims(pools []*Pool) int64 {
	var n int64
	for _, p := range pools {
		n += p.claims.claims.Load()
	}
	return n
}

// A commit that makes nothing claimable (here: a goal created, an attempt's log
// event) wakes no claim in any of four runners.
func TestUnrelatedCommitWakesNoClaim(t *testing.T) {
	url, db, svc, boss, ctx := pgService(t)
	must(t, svc.Agents.CreateAgent(ctx, boss, &models.Agent{Name: "dev", Kind: models.KindWorker, Roles: []string{"developer"}, Command: "true"}, ""))
	pools := wakePools(t, ctx, url, 4)
	before := claims(pools)
	must(t, svc.Goals.CreateGoal(ctx, boss, &models.Goal{Title: "unrelated"}))
	must(t, db.InTx(ctx, func(tx models.Tx) error {
		return tx.AppendEvent(ctx, &models.Event{Type: "attempt.log", Data: []byte(`{}`)})
	}))
	time.Sleep(time.Second)
	if got := claims(pools) - before; got != 0 {
		t.Fatalf("unrelated commits woke %d claim transactions among 4 runners, want 0", got)
	}
}

// One new task wakes exactly one claim among four runners: every runner hears the
// work-ready signal, one takes the claim turn and claims the task, and the claim's
// own commit (the task started) wakes no one.
func TestNewTaskWakesOneClaim(t *testing.T) {
	url, db, svc, boss, ctx := pgService(t)
	shared := filepath.Join(t.TempDir(), "runs.txt")
	must(t, svc.Agents.CreateAgent(ctx, boss, &models.Agent{Name: "dev", Kind: models.KindWorker, Roles: []string{"developer"},
		Command: script(t, "sleeper.sh", "3", shared), Concurrency: 4}, ""))
	pools := wakePools(t, ctx, url, 4)
	before := claims(pools)
	tk, err := svc.Tasks.CreateTask(ctx, boss, models.TaskSpec{Title: "one", Role: "developer", Contract: noneContract()})
	must(t, err)
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := db.GetTask(ctx, tk.ID)
		must(t, err)
		if got.State == models.TaskInProgress && got.LeaseOwner != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task not claimed: %s", got.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second) // the worker sleeps 3 s: nothing has freed a slot yet
	if got := claims(pools) - before; got != 1 {
		t.Fatalf("one new task woke %d claim transactions among 4 runners, want 1", got)
	}
}

// settleBarrier is a worker command that waits for the file go, then completes: the
// tasks it runs finish together.
func settleBarrier(t *testing.T, dir string) string {
	return "cat >/dev/null; while [ ! -f " + shq(filepath.Join(dir, "go")) + " ]; do sleep 0.01; done; echo TASK_COMPLETE"
}

// startTogether creates k tasks for one worker agent of concurrency k, waits until all
// run, and returns them with the settle transactions counted so far.
func startTogether(t *testing.T, h *harness, k int) ([]*models.Task, int64, string) {
	t.Helper()
	dir := t.TempDir()
	h.worker("dev", "developer", settleBarrier(t, dir), func(a *models.Agent) {
		a.Concurrency = k
		a.Sandbox = models.AgentSandbox{Read: []string{dir}}
	})
	tasks := make([]*models.Task, k)
	for i := range tasks {
		tasks[i] = h.task(fmt.Sprintf("together %d", i), "developer", noneContract())
	}
	h.start()
	for _, tk := range tasks {
		h.waitRunning(tk.ID)
	}
	return tasks, h.pool.run.settling.batches.txs.Load(), dir
}

// K attempts that finish together are settled in fewer than K transactions, and each
// task gets its own outcome: verified, one passed attempt, its own ledger entry.
func TestSettlesThatFinishTogetherShareTransactions(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			h := newHarness(t, d, nil)
			const k = 8
			tasks, before, dir := startTogether(t, h, k)
			must(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o644))
			for _, tk := range tasks {
				h.wait(tk.ID, models.TaskVerified)
			}
			txs := h.pool.run.settling.batches.txs.Load() - before
			if txs >= k {
				t.Fatalf("%d attempts finishing together took %d settle transactions, want fewer", k, txs)
			}
			for _, tk := range tasks {
				atts := h.attempts(tk.ID)
				if len(atts) != 1 || atts[0].Outcome != models.OutcomePassed {
					t.Fatalf("task %d attempts %+v", tk.ID, atts)
				}
				if got := h.ledgerTypes(tk.ID); len(got) != 1 || got[0] != "task.complete" {
					t.Fatalf("task %d ledger %v", tk.ID, got)
				}
			}
			t.Logf("%d attempts settled in %d transactions", k, txs)
		})
	}
}

// A settle that fails for one task of a batch loses none of the others: they are
// settled on their own, each once; the failed one is released and taken again.
func TestFailingSettleLosesNoOther(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			h := newHarness(t, d, nil)
			const k = 6
			var first atomic.Int64
			var failures atomic.Int32
			h.cfg.Poll = 100 * time.Millisecond
			tasks, _, dir := startTogether(t, h, k)
			victim := func() int64 {
				if first.Load() == tasks[0].ID {
					return tasks[1].ID
				}
				return tasks[0].ID
			}
			// The first settle holds its transaction for a moment, so that the others
			// queue up and settle together, the victim among them: its settle fails in
			// the shared transaction and again on its own.
			h.pool.run.settling.batches.fault = func(tr *taskRun) error {
				if first.CompareAndSwap(0, tr.task.ID) {
					time.Sleep(500 * time.Millisecond)
					return nil
				}
				if tr.task.ID == victim() && failures.Add(1) <= 2 {
					return errors.New("injected settle failure")
				}
				return nil
			}
			must(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o644))
			for _, tk := range tasks {
				h.wait(tk.ID, models.TaskVerified)
			}
			if failures.Load() < 2 || h.pool.run.settling.batches.splits.Load() == 0 {
				t.Fatalf("the fault fired %d times, %d shared transactions failed", failures.Load(), h.pool.run.settling.batches.splits.Load())
			}
			for _, tk := range tasks {
				atts := h.attempts(tk.ID)
				if tk.ID == victim() {
					continue // its first attempt's outcome was not recorded: taken over
				}
				if len(atts) != 1 || atts[0].Outcome != models.OutcomePassed {
					t.Fatalf("task %d (not the failing one) attempts %+v", tk.ID, atts)
				}
			}
		})
	}
}

// A burst of tasks created one after another while four runners pass the claim turn
// around: every task is claimed at once, none waits for the poll tick (a minute here)
// because its signal reached only runners that left it to a holder who had let go.
func TestBurstLosesNoWakeUp(t *testing.T) {
	url, db, svc, boss, ctx := pgService(t)
	for i := range 2 {
		must(t, svc.Agents.CreateAgent(ctx, boss, &models.Agent{Name: fmt.Sprintf("dev%d", i), Kind: models.KindWorker,
			Roles: []string{"developer"}, Command: "cat >/dev/null; sleep 20", Concurrency: 20}, ""))
	}
	pools := wakePools(t, ctx, url, 4)
	const n = 30
	ids := make([]int64, n)
	for i := range ids {
		tk, err := svc.Tasks.CreateTask(ctx, boss, models.TaskSpec{Title: fmt.Sprintf("burst %d", i), Role: "developer", Contract: noneContract()})
		must(t, err)
		ids[i] = tk.ID
		time.Sleep(time.Duration(i%4) * 15 * time.Millisecond) // some together, some apart
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, id := range ids {
		for {
			got, err := db.GetTask(ctx, id)
			must(t, err)
			if got.State == models.TaskInProgress && got.LeaseOwner != "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %d still %s 10 s after the burst: a wake-up was lost (claims so far %d)", id, got.State, claims(pools))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("%d tasks claimed in %d claim transactions among 4 runners", n, claims(pools))
}
