package runner

import (
	"testing"

	"github.com/countersign/countersign/models"
)

// noopBatch returns, on PostgreSQL, n ready no-op tasks for one worker agent of
// concurrency n and a prepared pool (not started) that claims them in one batch, as
// serve runs it (an attempt token per attempt).
func noopBatch(t *testing.T, n int) (*harness, *Pool) {
	t.Helper()
	h := newHarness(t, "postgres", func(c *Config) { c.APIURL, c.ClaimBatch = "http://127.0.0.1:9", n })
	h.worker("w", "developer", noopCommand, func(a *models.Agent) { a.Concurrency = n })
	for range n {
		h.task("noop", "developer", noopContract())
	}
	p, err := New(h.cfg)
	must(t, err)
	must(t, p.prepare(h.ctx))
	return h, p
}

// claimStatements claims n ready no-op tasks in one claim, on PostgreSQL, as serve
// runs it (an attempt token per attempt), and returns the statements the claim sent.
func claimStatements(t *testing.T, n int) int64 {
	t.Helper()
	h, p := noopBatch(t, n)
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
// statements per batch, whatever the number of tasks (issue #34): the task rows, the
// attempts, their tokens and the events go out with one statement per table per batch
// (models.WriteBehind), and the agents' slots are locked with one statement and
// written with one (slotPool). The fixed part: BEGIN, the worker loads, the ready
// query, the hat histories, the slots' lock, the agent and the rules read once, the
// batched writes, the slots' write, the event appends' own statements and COMMIT.
func TestClaimStatementsPerBatchOnPostgres(t *testing.T) {
	one, eight := claimStatements(t, 1), claimStatements(t, 8)
	perTask := float64(eight-one) / 7
	t.Logf("statements: claim of 1 task %d, of 8 tasks %d; %.2f per extra task", one, eight, perTask)
	const maxFixed = 12
	if eight > one {
		t.Errorf("%.2f statements per extra claimed task, want none (1: %d, 8: %d)", perTask, one, eight)
	}
	if one > maxFixed {
		t.Errorf("%d statements for a batch of one, want at most %d", one, maxFixed)
	}
}

// settleStatements claims n ready no-op tasks on PostgreSQL, marks each first attempt
// passed as its checks would, settles them all in one batch and returns the statements
// the settle sent.
func settleStatements(t *testing.T, n int) int64 {
	t.Helper()
	h, p := noopBatch(t, n)
	runs, _, err := p.claims.claim(h.ctx)
	must(t, err)
	batch := make([]*settleReq, len(runs))
	for i, tr := range runs {
		tr.next.outcome = models.OutcomePassed
		batch[i] = &settleReq{ctx: h.ctx, tr: tr, ar: tr.next}
		p.claims.tmpDirs.release(tr.next.tmp)
	}
	count := h.db.CountStatements()
	must(t, p.run.settling.settleIn(h.ctx, batch))
	n64 := count.N()
	for _, tr := range runs {
		got, err := h.db.GetTask(h.ctx, tr.task.ID)
		must(t, err)
		if got.State != models.TaskVerified {
			t.Fatalf("task %d is %s after the settle, want verified", tr.task.ID, got.State)
		}
		if atts := h.attempts(tr.task.ID); len(atts) != 1 || atts[0].Outcome != models.OutcomePassed {
			t.Fatalf("task %d attempts %+v", tr.task.ID, atts)
		}
	}
	return n64
}

// TestSettleStatementsPerBatchOnPostgres holds the settle of attempts that finish
// together to a constant number of statements per batch (issue #34): the tasks are
// locked with one statement (PrefetchLocks), and the attempt rows, the task rows, the
// events and the ledger entries written with one each (models.WriteBehind).
func TestSettleStatementsPerBatchOnPostgres(t *testing.T) {
	one, eight := settleStatements(t, 1), settleStatements(t, 8)
	t.Logf("statements: settle of 1 attempt %d, of 8 attempts %d", one, eight)
	const maxFixed = 10
	if eight > one {
		t.Errorf("%.2f statements per extra settled attempt, want none (1: %d, 8: %d)", float64(eight-one)/7, one, eight)
	}
	if one > maxFixed {
		t.Errorf("%d statements for a batch of one, want at most %d", one, maxFixed)
	}
}
