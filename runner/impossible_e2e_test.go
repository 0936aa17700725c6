package runner

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// claim is what the workers of these tests say about their tasks.
const claim = "the tests contradict the spec"

// TestWorkersMaySayImpossible: a real worker process that ends its output with
// `IMPOSSIBLE: the tests contradict the spec` — or, under a signal contract, writes
// the reason into the signal file's impossible field — ends at stage impossible after
// exactly one attempt: no check, no revision, no second attempt, nothing landed, no
// task.complete on the ledger; the task is blocked with the reason in its inbox item
// and a task.impossible event. A lead then answers the claim (the answer reaches the
// next brief, the task is verified), amends the brief (the new brief reaches the
// worker) or cancels the task; accepting is refused while the claim is open. The
// agent's scorecard counts three claims and neither a failure nor a block.
//
// With the detection off (impossibleOff, the defence-off subtest) the claim is output
// like any other: the task is revised and blocked at the mechanical check after two
// attempts. Running this test with COUNTERSIGN_TEST_IMPOSSIBLE_OFF=1 switches the
// detection off for the defended subtest too, which then fails.
func TestWorkersMaySayImpossible(t *testing.T) {
	off := os.Getenv("COUNTERSIGN_TEST_IMPOSSIBLE_OFF") != ""
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			impossibleOff = off
			t.Cleanup(func() { impossibleOff = false })
			impossibleRun(t, d)
		})
	}
	t.Run("defence-off", func(t *testing.T) {
		impossibleOff = true
		t.Cleanup(func() { impossibleOff = false })
		h := newHarness(t, "sqlite", nil)
		h.worker("honest", "developer", `cat >/dev/null; echo "IMPOSSIBLE: `+claim+`"`)
		tk := h.task("add the numbers", "developer", fileContract())
		h.start()
		blocked := h.wait(tk.ID, models.TaskBlocked)
		a := h.attempts(tk.ID)
		if len(a) != 2 || a[1].Outcome != models.OutcomeFailed || a[1].Stage == models.StageImpossible || blocked.OpenImpossible() != nil {
			t.Fatalf("without the detection the claim should be judged as output: %d attempts, last %+v", len(a), a[len(a)-1])
		}
	})
}

// impossibleRun is TestWorkersMaySayImpossible on one dialect.
func impossibleRun(t *testing.T, dialect string) {
	h := newHarness(t, dialect, nil)
	done := `printf '%0120d\n' 0 > "$COUNTERSIGN_OUTPUT_PATH"; echo TASK_COMPLETE`
	// It finishes once its brief holds an answer or an amended brief; until then it
	// says the task cannot be done.
	h.worker("honest", "developer", `brief=$(cat); case "$brief" in *follow-the-spec*|*amended-brief*) `+done+`;; `+
		`*) echo "reading the tests"; echo "IMPOSSIBLE: `+claim+`";; esac`)
	h.worker("signaller", "approver", `cat >/dev/null; printf '{"impossible": "%s"}' "`+claim+`" > "$COUNTERSIGN_OUTPUT_PATH"`)
	answered := h.task("add the numbers", "developer", fileContract())
	amended := h.task("sort the list", "developer", fileContract())
	cancelled := h.task("divide by zero", "developer", fileContract())
	signal := h.task("approve the release", "approver", contract.Contract{
		Completion:   contract.Completion{Type: contract.CompletionSignal, Path: "out/{task_id}.json", Signal: "approved"},
		Verification: contract.Verification{Type: contract.VerifyVerifiable}})
	h.start()

	for _, tk := range []*models.Task{answered, amended, cancelled, signal} {
		assertImpossible(t, h, tk.ID)
	}
	// Nothing was built to accept.
	if _, err := h.svc.Tasks.TaskAction(h.ctx, h.boss, answered.ID, models.ActAccept, models.ActionInput{Reason: "fine"}); models.ErrorCode(err) != models.ECONFLICT {
		t.Fatalf("accepting an impossible claim: %v", err)
	}

	// Answer: the claim and the answer reach the next brief; the task is verified.
	_, err := h.svc.Tasks.TaskAction(h.ctx, h.boss, answered.ID, models.ActAnswer, models.ActionInput{Answer: "follow-the-spec, the tests are wrong"})
	must(t, err)
	h.wait(answered.ID, models.TaskVerified)
	if b := h.brief(answered.ID, 2); !strings.Contains(b, "You said the task cannot be done as specified") || !strings.Contains(b, claim) || !strings.Contains(b, "follow-the-spec") {
		t.Fatalf("the next brief lacks the claim or the answer:\n%s", b)
	}
	// Amend: the new brief reaches the worker.
	_, err = h.svc.Tasks.TaskAction(h.ctx, h.boss, amended.ID, models.ActAmend, models.ActionInput{Brief: "Sort the list; the amended-brief says descending."})
	must(t, err)
	h.wait(amended.ID, models.TaskVerified)
	if b := h.brief(amended.ID, 2); !strings.Contains(b, "amended-brief") {
		t.Fatalf("the next brief is not the amended one:\n%s", b)
	}
	// Cancel.
	_, err = h.svc.Tasks.TaskAction(h.ctx, h.boss, cancelled.ID, models.ActCancel, models.ActionInput{Reason: "cannot be done"})
	must(t, err)
	for _, tk := range []*models.Task{answered, amended, cancelled} {
		if n := h.openInbox(tk.ID, models.InboxBlocked); n != 0 {
			t.Fatalf("task %d: its blocked item stays open", tk.ID)
		}
	}

	// The scorecard: three claims, no failure and no block.
	agents, err := h.db.ListAgents(h.ctx)
	must(t, err)
	i := slices.IndexFunc(agents, func(a models.Agent) bool { return a.Name == "honest" })
	st, err := h.svc.Stats.AgentStats(h.ctx, h.boss, agents[i].ID, 7)
	must(t, err)
	sc := st.Scorecard
	if sc.Impossible != 3 || sc.Blocked != 0 || sc.BlockedOther != 0 || sc.Revised != 0 || sc.Verified != 2 || sc.Attempts != 5 {
		t.Fatalf("scorecard: %+v", sc)
	}
	for _, bar := range st.Daily {
		if bar.Blocked != 0 {
			t.Fatalf("a daily bar counts a claim as a block: %+v", st.Daily)
		}
	}
}

// assertImpossible waits for task id to block on its worker's claim and checks what
// the claim left: one attempt at stage impossible, no budget used, the reason in the
// inbox, the task.impossible event, no completion on the ledger.
func assertImpossible(t *testing.T, h *harness, id int64) {
	t.Helper()
	blocked := h.wait(id, models.TaskBlocked)
	time.Sleep(300 * time.Millisecond) // a second attempt would have begun by now
	a := h.attempts(id)
	if len(a) != 1 || a[0].Outcome != models.OutcomeImpossible || a[0].Stage != models.StageImpossible || !strings.Contains(a[0].Diagnosis, claim) {
		t.Fatalf("task %d: want exactly one attempt at stage impossible, got %+v", id, a)
	}
	if q := blocked.OpenImpossible(); q == nil || q.Text != claim || blocked.AttemptsUsed != 0 || blocked.Commit != "" {
		t.Fatalf("task %d: claim %+v, attempts used %d, commit %q", id, q, blocked.AttemptsUsed, blocked.Commit)
	}
	items, err := h.db.ListInbox(h.ctx, models.InboxFilter{TaskID: id, Kind: models.InboxBlocked})
	must(t, err)
	if len(items) != 1 || !strings.Contains(items[0].Title, claim) {
		t.Fatalf("task %d: inbox %+v", id, items)
	}
	p := h.blockedPayload(id)
	if n := len(p.Attempts); n != 1 || p.Attempts[0].Stage != models.StageImpossible || p.Attempts[0].Failure != claim {
		t.Fatalf("task %d: blocked payload %+v", id, p.Attempts)
	}
	if ev := h.events(id); !slices.Contains(ev, "task.impossible") || slices.Contains(ev, "task.verified") {
		t.Fatalf("task %d: events %v", id, ev)
	}
	if slices.Contains(h.ledgerTypes(id), models.LedgerTaskComplete) {
		t.Fatalf("task %d: a claim wrote a completion: %v", id, h.ledgerTypes(id))
	}
}
