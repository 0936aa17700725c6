package runner

import (
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// TestHeldAdvisoryTaskWaitsForThePrompt: with prompt_for_advisory on, the pool leaves
// a held advisory task alone (no attempt, still pending) while it runs a verifiable
// one beside it; once the exec proceeds, it runs the advisory task.
func TestHeldAdvisoryTaskWaitsForThePrompt(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	r, err := h.svc.Templates.Rules(h.ctx)
	must(t, err)
	r.PromptForAdvisory = true
	must(t, h.svc.Templates.SaveRules(h.ctx, h.boss, &r))
	h.worker("dev", "developer", script(t, "noout.sh"))
	c := fileContract()
	c.Verification = contract.Verification{Type: contract.VerifyAdvisory}
	held := h.task("investigate the slow API", "developer", c)
	other := h.task("build the fast API", "developer", contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone},
		Verification: contract.Verification{Type: contract.VerifySkip}})
	h.start()
	h.wait(other.ID, models.TaskVerified, models.TaskBlocked)
	time.Sleep(3 * h.cfg.Poll) // a few more claims
	if tk, _ := h.db.GetTask(h.ctx, held.ID); tk.State != models.TaskPending || len(h.attempts(held.ID)) != 0 {
		t.Fatalf("held task is %s with %d attempts", tk.State, len(h.attempts(held.ID)))
	}
	_, err = h.svc.Tasks.ResolveAdvisoryPrompt(h.ctx, h.boss, held.ID, models.AdvisoryDecision{Action: models.AdvisoryProceed})
	must(t, err)
	h.wait(held.ID, models.TaskVerified)
	if len(h.attempts(held.ID)) != 1 {
		t.Fatalf("attempts after proceeding: %d", len(h.attempts(held.ID)))
	}
}
