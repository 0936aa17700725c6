//go:build linux && (amd64 || arm64)

package runner

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// usageWorker reports cost USD, 100 input and 50 output tokens of model through the
// usage file, then finishes.
func usageWorker(cost, model string) string {
	return `printf '{"total_cost_usd":` + cost + `,"num_turns":2,"model":"` + model + `","session_id":"s-1","usage":{"input_tokens":100,"output_tokens":50}}' > "$COUNTERSIGN_USAGE_FILE"; sleep 0.2; echo TASK_COMPLETE`
}

// doneContract passes on the done token alone.
func doneContract() contract.Contract {
	return contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
		Verification: contract.Verification{Type: contract.VerifyVerifiable, Criteria: []contract.Criterion{{Activity: "unit-test", Description: "passes"}}}}
}

// TestGoalBudgetHoldsUnderConcurrency: a goal with budget $3 and eight tasks for one
// agent of concurrency 8, each attempt reporting $1.00: attempts reserve what is left
// before they start, so $3.00 to $4.00 is spent in all and the rest are blocked at
// stage budget before any worker starts, uncharged. A new runner (a restart) reads the
// same spend: budgets are sums over stored attempts.
func TestGoalBudgetHoldsUnderConcurrency(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			h := newHarness(t, dialect, nil)
			h.worker("spender", "developer", usageWorker("1.00", "claude-sonnet-4-5"), func(a *models.Agent) { a.Concurrency = 8 })
			three := 3.0
			g := &models.Goal{Title: "Capped", Budget: &contract.Budget{MaxCostUSD: &three}}
			must(t, h.svc.Goals.CreateGoal(h.ctx, h.boss, g))
			var ids []int64
			for i := 0; i < 8; i++ {
				tk := h.task("Spend "+itoa(int64(i)), "developer", doneContract(), func(s *models.TaskSpec) { s.GoalID = &g.ID })
				ids = append(ids, tk.ID)
			}
			h.start()
			verified, blocked := 0, 0
			for _, id := range ids {
				tk := h.settled(id, 2*time.Minute)
				switch tk.State {
				case models.TaskVerified:
					verified++
				case models.TaskBlocked:
					blocked++
					if tk.AttemptsUsed != 0 {
						t.Errorf("task %d was charged %d attempts for a budget stop", id, tk.AttemptsUsed)
					}
					if p := h.blockedPayload(id); len(p.Attempts) == 0 || p.Attempts[len(p.Attempts)-1].Stage != models.StageBudget {
						t.Errorf("task %d is blocked, not at stage budget: %+v", id, p.Attempts)
					}
					if n := len(h.attempts(id)); n != 0 {
						t.Errorf("task %d blocked by its budget has %d attempts: a worker started", id, n)
					}
				default:
					t.Fatalf("task %d ended %s", id, tk.State)
				}
			}
			spend, err := h.db.SpendOf(h.ctx, models.SpendScope{GoalID: g.ID})
			must(t, err)
			if spend.CostUSD < 3 || spend.CostUSD > 4 || float64(verified) != spend.CostUSD || blocked != 8-verified {
				t.Fatalf("spent $%.2f with %d verified and %d blocked; want $3.00 to $4.00 and the rest blocked", spend.CostUSD, verified, blocked)
			}
			checkBudgetWarningAndUsage(t, h, g.ID, ids[0])

			// A restart: a new pool on the same database blocks a new task of the goal.
			stopCtx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
			defer cancel()
			must(t, h.pool.Stop(stopCtx))
			late := h.task("Spend late", "developer", doneContract(), func(s *models.TaskSpec) { s.GoalID = &g.ID })
			h.start()
			if tk := h.settled(late.ID, time.Minute); tk.State != models.TaskBlocked {
				t.Fatalf("after a restart a task of the spent goal is %s, want blocked", tk.State)
			}

			// Raising the goal's budget resumes every task it stopped.
			ten := 10.0
			if _, err := h.svc.Goals.SetGoalBudget(h.ctx, h.boss, g.ID, &contract.Budget{MaxCostUSD: &ten}); err != nil {
				t.Fatal(err)
			}
			h.waitLong(2*time.Minute, "every task verified after the raise", func() bool {
				for _, id := range append(ids, late.ID) {
					if tk, err := h.db.GetTask(h.ctx, id); err != nil || tk.State != models.TaskVerified {
						return false
					}
				}
				return true
			})
			if spend, err := h.db.SpendOf(h.ctx, models.SpendScope{GoalID: g.ID}); err != nil || spend.CostUSD != 9 {
				t.Fatalf("after the raise the goal spent $%.2f (%v), want $9.00", spend.CostUSD, err)
			}
		})
	}
}

// TestUsageFileIsReadNeverTrusted: a usage file that is not JSON is an attempt note,
// not a failure; tokens of a model without a price leave the cost unknown (null), not
// zero; tokens of a priced model are charged at the price, which is kept.
func TestUsageFileIsReadNeverTrusted(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	h.worker("garbage", "a", `echo 'not json {' > "$COUNTERSIGN_USAGE_FILE"; echo TASK_COMPLETE`)
	h.worker("unpriced", "b", `printf '{"model":"mystery-1","usage":{"input_tokens":10,"output_tokens":5}}' > "$COUNTERSIGN_USAGE_FILE"; echo TASK_COMPLETE`)
	h.worker("priced", "c", `printf '{"model":"claude-haiku-4-5-20251001","usage":{"input_tokens":1000000,"output_tokens":100000}}' > "$COUNTERSIGN_USAGE_FILE"; echo TASK_COMPLETE`)
	h.worker("silent", "d", `echo TASK_COMPLETE`)
	g, u, p, s := h.task("G", "a", doneContract()), h.task("U", "b", doneContract()), h.task("P", "c", doneContract()), h.task("S", "d", doneContract())
	h.start()
	usage := func(id int64) *models.Usage {
		if tk := h.settled(id, time.Minute); tk.State != models.TaskVerified {
			t.Fatalf("task %d: %s; attempts %+v", id, tk.State, h.attempts(id))
		}
		return h.attempts(id)[0].Usage
	}
	if got := usage(g.ID); got == nil || got.Note == "" || got.Tokens() != nil || got.CostUSD != nil {
		t.Errorf("a garbage usage file: %+v, want a note and nothing else", got)
	}
	if got := usage(u.ID); got == nil || got.CostUSD != nil || *got.Tokens() != 15 || got.Note == "" {
		t.Errorf("an unpriced model: %+v, want 15 tokens, cost null and a note", got)
	}
	if got := usage(p.ID); got == nil || got.CostUSD == nil || *got.CostUSD != 1.5 || got.CostSource != models.CostPriced || got.Price == nil || got.Price.InputPerMTok != 1 {
		t.Errorf("a priced model: %+v, want $1.50 priced at Haiku 4.5's $1/$5", got)
	}
	if got := usage(s.ID); got != nil {
		t.Errorf("a worker that reported nothing: %+v, want no usage at all", got)
	}
}

// TestPassEnvByName: an agent's processes get the variables it names from the
// runner's environment, and no others; the stored agent holds the names only.
func TestPassEnvByName(t *testing.T) {
	t.Setenv("CS_TEST_KEY", "sk-passed-by-name")
	t.Setenv("CS_TEST_OTHER", "not-passed")
	h := newHarness(t, "sqlite", nil)
	h.worker("keyed", "developer", `[ "$CS_TEST_KEY" = sk-passed-by-name ] && [ -z "$CS_TEST_OTHER" ] && echo TASK_COMPLETE`,
		func(a *models.Agent) { a.PassEnv = []string{"CS_TEST_KEY"} })
	tk := h.task("Use the key", "developer", doneContract())
	h.start()
	if got := h.settled(tk.ID, time.Minute); got.State != models.TaskVerified {
		t.Fatalf("the worker did not get exactly its variable: %s; attempts %+v", got.State, h.attempts(tk.ID))
	}
	a, err := h.db.GetAgentByName(h.ctx, "keyed")
	must(t, err)
	if len(a.PassEnv) != 1 || a.PassEnv[0] != "CS_TEST_KEY" {
		t.Fatalf("stored pass_env %v", a.PassEnv)
	}
	bad := &models.Agent{Name: "bad", Kind: models.KindWorker, Roles: []string{"x"}, Command: "true", PassEnv: []string{"COUNTERSIGN_TOKEN"}}
	if err := h.svc.Agents.CreateAgent(h.ctx, h.boss, bad, ""); models.ErrorCode(err) != models.EINVALID {
		t.Fatalf("passing a variable the runner sets itself: %v, want EINVALID", err)
	}
}

// TestStreamJSONWorker: a worker that prints Claude Code's stream-json has its output
// decoded: the checks read the final result (its done token), the attempt's tail is
// readable (tool calls, not raw JSON), and the result's usage is the attempt's. One
// whose API calls, priced, pass what its attempt reserved is killed at stage budget,
// uncharged, long before it would have ended.
func TestStreamJSONWorker(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	abs, err := filepath.Abs("testdata/fake-claude.sh")
	must(t, err)
	cmd := "sh " + shq(abs) + " --output-format stream-json --verbose"
	h.worker("claude", "developer", cmd)
	h.worker("spendthrift", "tester", "FAKE_CLAUDE=expensive "+cmd)
	ok := h.task("Run the tests", "developer", doneContract())
	cent := 0.01
	capped := doneContract()
	capped.Budget = &contract.Budget{MaxCostUSD: &cent}
	costly := h.task("Think hard", "tester", capped)
	h.start()

	if tk := h.settled(ok.ID, time.Minute); tk.State != models.TaskVerified {
		t.Fatalf("the stream-json worker: %s; attempts %+v", tk.State, h.attempts(ok.ID))
	}
	a := h.attempts(ok.ID)[0]
	if !strings.Contains(a.OutputTail, "→ Bash: go test ./...") || strings.Contains(a.OutputTail, `{"type":`) || !strings.Contains(a.OutputTail, "All done. TASK_COMPLETE") {
		t.Errorf("the attempt's tail is not the readable log and the result:\n%s", a.OutputTail)
	}
	if u := a.Usage; u == nil || u.CostUSD == nil || *u.CostUSD != 0.0123 || *u.InputTokens != 100 || *u.CacheReadTokens != 7 || u.SessionID != "sess-1" || *u.Turns != 2 {
		t.Errorf("the stream's usage: %+v", a.Usage)
	}

	start := time.Now()
	tk := h.settled(costly.ID, time.Minute)
	if tk.State != models.TaskBlocked || tk.AttemptsUsed != 0 || time.Since(start) > 20*time.Second {
		t.Fatalf("the run past its budget: %s, %d attempts charged, after %s", tk.State, tk.AttemptsUsed, time.Since(start))
	}
	at := h.attempts(costly.ID)
	if len(at) != 1 || at[0].Stage != models.StageBudget {
		t.Fatalf("the stopped attempt: %+v", at)
	}
	// What it used before it was stopped counts against its budgets.
	if u := at[0].Usage; u == nil || *u.InputTokens != 2_000_000 || u.CostUSD == nil || *u.CostUSD < 6 {
		t.Fatalf("the stopped attempt's usage: %+v", u)
	}
}

// checkBudgetWarningAndUsage checks that the goal raised exactly one budget warning
// and that the first task's attempt recorded the worker's reported usage; split out
// of TestGoalBudgetHoldsUnderConcurrency to keep that test within the length limit.
func checkBudgetWarningAndUsage(t *testing.T, h *harness, goalID, firstTask int64) {
	t.Helper()
	warned := 0
	items, err := h.db.ListInbox(h.ctx, models.InboxFilter{Kind: models.InboxBudget, IncludeResolved: true})
	must(t, err)
	for _, it := range items {
		if strings.Contains(it.Title, "goal "+itoa(goalID)+" spent $3.00 of $3.00") {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("budget warnings %d, want one as the goal passed 80%%: %+v", warned, items)
	}
	a := h.attempts(firstTask)
	if len(a) == 1 {
		u := a[0].Usage
		if u == nil || u.CostUSD == nil || *u.CostUSD != 1 || u.CostSource != models.CostReported || *u.InputTokens != 100 || u.Model != "claude-sonnet-4-5" || *u.Turns != 2 {
			t.Errorf("the recorded usage: %+v", u)
		}
	}
}
