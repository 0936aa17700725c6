package runner

import (
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// TestPoolsShareAnAgentsConcurrencyOnPostgres: three pools (three runner ids) on one
// PostgreSQL claim for one agent of concurrency 2 through its slots: all the work is
// done, the agent never holds more than two live leases between them, and does hold
// two.
func TestPoolsShareAnAgentsConcurrencyOnPostgres(t *testing.T) {
	h := newHarness(t, "postgres", nil)
	h.worker("dev", "developer", "cat >/dev/null; sleep 0.3", func(a *models.Agent) { a.Concurrency = 2 })
	var ids []int64
	for i := range 8 {
		ids = append(ids, h.task("t"+itoa(int64(i)), "developer", noneContract()).ID)
	}
	for _, id := range []string{"pool-a", "pool-b", "pool-c"} {
		h.cfg.RunnerID = id
		h.start()
	}
	peak, owners := 0, map[string]bool{}
	for verified := 0; verified < len(ids); {
		tasks, err := h.db.ListTasks(h.ctx, models.TaskFilter{Limit: 100})
		must(t, err)
		live, now := 0, time.Now()
		verified = 0
		for _, tk := range tasks {
			if tk.State == models.TaskInProgress && tk.LeaseOwner != "" && tk.LeaseUntil != nil && tk.LeaseUntil.After(now) {
				live++
				owners[tk.LeaseOwner] = true
			}
			if tk.State == models.TaskVerified {
				verified++
			}
		}
		peak = max(peak, live)
		if h.ctx.Err() != nil {
			t.Fatalf("%d of %d verified before the deadline", verified, len(ids))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if peak != 2 {
		t.Fatalf("peak live leases %d, want 2 (the agent's concurrency)", peak)
	}
	t.Logf("leases held by %v", owners)
}
