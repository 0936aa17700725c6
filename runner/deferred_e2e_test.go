package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// TestDeferredCriteriaGateTheGoal: a task's deferred criterion does not run with its
// attempt; once its goal waits for verification it runs in the goal's final
// workspace. Failing, it keeps the goal from being verified and says why; passing,
// the lead verifies and goal.verified names the deferred criteria that passed.
func TestDeferredCriteriaGateTheGoal(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, d, nil)
			h.worker("dev", "developer", script(t, "ok.sh"))
			withDeferred := func(check string) contract.Contract {
				c := fileContract()
				c.Verification.Criteria = []contract.Criterion{
					{Activity: "unit-test", Description: "unit tests pass", Timing: contract.TimingImmediate},
					{Activity: "e2e", Description: "the integrated result works", Command: check, Timing: contract.TimingDeferred},
				}
				return c
			}
			failing, passing := &models.Goal{Title: "Fails end to end"}, &models.Goal{Title: "Works end to end"}
			must(t, h.svc.Goals.CreateGoal(h.ctx, h.boss, failing))
			must(t, h.svc.Goals.CreateGoal(h.ctx, h.boss, passing))
			// The deferred check of the first would fail in the attempt too: it must not run there.
			bad := h.task("integrate badly", "developer", withDeferred(`echo "no integrated.txt here" >&2; test -f integrated.txt`),
				func(s *models.TaskSpec) { s.GoalID = &failing.ID })
			good := h.task("integrate well", "developer", withDeferred(`ls out`), func(s *models.TaskSpec) { s.GoalID = &passing.ID })
			h.start()
			h.wait(bad.ID, models.TaskVerified)
			h.wait(good.ID, models.TaskVerified)

			g := h.waitDeferred(failing.ID, models.DeferredFailed)
			if !strings.Contains(g.Deferred.Output, "no integrated.txt here") || g.Deferred.Diagnosis == "" || len(g.Deferred.Results) != 1 {
				t.Fatalf("failed deferred checks: %+v", g.Deferred)
			}
			_, err := h.svc.Goals.VerifyGoal(h.ctx, h.boss, failing.ID, "looks fine")
			if models.ErrorCode(err) != models.ECONFLICT || !strings.Contains(err.Error(), "deferred") {
				t.Fatalf("verifying past failed deferred checks: %v", err)
			}

			h.waitDeferred(passing.ID, models.DeferredPassed)
			_, err = h.svc.Goals.VerifyGoal(h.ctx, h.boss, passing.ID, "works")
			must(t, err)
			entries, err := h.db.ListLedger(h.ctx, models.LedgerFilter{GoalID: passing.ID, Types: []string{models.LedgerGoalVerified}})
			must(t, err)
			if len(entries) != 1 || !strings.Contains(string(entries[0].Message), `"deferred":1`) {
				t.Fatalf("goal.verified: %+v", entries)
			}

			// Rejected with a fix task, the failing goal drops its verdict: the checks
			// run again once it waits for verification again.
			_, err = h.svc.Goals.RejectGoal(h.ctx, h.boss, failing.ID, "the integration fails",
				[]models.TaskSpec{{Title: "add the integration file", Role: "developer", Contract: fileContract()}})
			must(t, err)
			if g, _ := h.db.GetGoal(h.ctx, failing.ID); g.Deferred != nil {
				t.Fatalf("a rejected goal keeps its deferred verdict: %+v", g.Deferred)
			}
		})
	}
}

// waitDeferred waits until goal id's deferred checks reach status.
func (h *harness) waitDeferred(id int64, status string) *models.Goal {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		g, err := h.db.GetGoal(h.ctx, id)
		must(h.t, err)
		if g.Deferred != nil && g.Deferred.Status == status {
			return g
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("goal %d (%s): deferred checks %+v, want %s", id, g.State, g.Deferred, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
