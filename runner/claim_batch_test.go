package runner

import (
	"testing"

	"github.com/countersign/countersign/models"
)

// claimStatements claims n ready no-op tasks in one claim, on PostgreSQL, as serve
// runs it (an attempt token per attempt), and returns the statements the claim sent.
func claimStatements(t *testing.T, n int) int64 {
	t.Helper()
	h := newHarness(t, "postgres", func(c *Config) { c.APIURL, c.ClaimBatch = "http://127.0.0.1:9", n })
	h.worker("w", "developer", noopCommand, func(a *models.Agent) { a.Concurrency = n })
	for range n {
		h.task("noop", "developer", noopContract())
	}
	p, err := New(h.cfg)
	must(t, err)
	must(t, p.prepare(h.ctx))
	count := h.db.CountStatements()
	runs, _, err := p.claims.claim(h.ctx)
	must(t, err)
	if len(runs) != n {
		t.Fatalf("claimed %d tasks, want %d", len(runs), n)
	}
	for _, tr := range runs {
		if ar := tr.next; ar == nil || ar.row == nil || ar.row.ID == 0 || ar.token == "" || ar.tokenID == 0 {
			t.Fatalf("task %d: attempt or token without its id: %+v", tr.task.ID, ar)
		}
		p.claims.tmpDirs.release(tr.next.tmp)
	}
	return count.N()
}

// TestClaimStatementsPerBatchOnPostgres holds the claim to a constant number of
// statements per batch plus a small term per task (issue #34): the task rows, the
// attempts, their tokens and the events go out with one statement per table per batch
// (models.WriteBehind). What remains per task is taking its slot (one UPDATE, two when
// the agent has no empty slot left). The fixed part: BEGIN, the worker loads, the
// ready query, the agent and the rules read once, the four batched writes, the
// event appends' own statements and COMMIT.
func TestClaimStatementsPerBatchOnPostgres(t *testing.T) {
	one, eight := claimStatements(t, 1), claimStatements(t, 8)
	perTask := float64(eight-one) / 7
	t.Logf("statements: claim of 1 task %d, of 8 tasks %d; %.2f per extra task", one, eight, perTask)
	const maxPerTask, maxFixed = 1, 20
	if perTask > maxPerTask {
		t.Errorf("%.2f statements per extra claimed task, want at most %d (1: %d, 8: %d)", perTask, maxPerTask, one, eight)
	}
	if fixed := one - maxPerTask; fixed > maxFixed {
		t.Errorf("%d statements for a batch of one, want at most %d", one, maxFixed+maxPerTask)
	}
}
