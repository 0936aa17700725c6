package pages_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// TestImpossibleClaimInTheDashboard: a task whose worker said it cannot be done as
// specified shows the reason on its inbox item and its task page, with the Answer and
// Amend forms and no Accept; the Amend form posts the new brief and sends the task
// back; the scorecard ranking shows the agent's "said impossible" count.
func TestImpossibleClaimInTheDashboard(t *testing.T) {
	e := newEnv(t, "sqlite")
	e.team()
	ctx := e.ctx()
	const reason = "the tests contradict the spec"
	tk, err := e.svc.Tasks.CreateTask(ctx, models.System, models.TaskSpec{Title: "Add the numbers", Brief: "Add them.", Role: "developer", Assignee: "bot",
		Contract: contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, Path: "out/{task_id}.md"}}})
	must(t, err)
	e.act("runner", tk.ID, models.ActStart, models.ActionInput{})
	runner, err := e.svc.Agents.RunnerAgent(ctx)
	must(t, err)
	now := time.Now().UTC()
	must(t, e.db.InTx(ctx, func(tx models.Tx) error {
		lt, err := tx.LockTask(ctx, tk.ID)
		if err != nil {
			return err
		}
		if err := tx.CreateAttempt(ctx, &models.Attempt{TaskID: tk.ID, Number: 1, AgentID: e.agents["bot"].ID, RunnerID: "r",
			Outcome: models.OutcomeImpossible, Stage: models.StageImpossible, Diagnosis: reason, Checks: []models.CheckResult{}, StartedAt: now, FinishedAt: &now}); err != nil {
			return err
		}
		return e.svc.Attempts.BlockImpossibleTask(ctx, tx, runner, lt, 1, reason, nil)
	}))

	ex := e.browser().login("exec")
	inbox := ex.get("/inbox")
	for _, want := range []string{`data-testid="inbox-impossible-reason">` + reason, `data-testid="inbox-form-answer"`, `data-testid="inbox-form-amend"`,
		`data-testid="inbox-amend-brief"`, "said it cannot be done as specified"} {
		if !strings.Contains(inbox.Body, want) {
			t.Errorf("the inbox lacks %s", want)
		}
	}
	if strings.Contains(inbox.Body, `data-testid="inbox-form-accept"`) {
		t.Error("the inbox offers to accept a claim")
	}
	page := ex.get("/tasks/" + itoa64(tk.ID))
	for _, want := range []string{`data-testid="task-impossible-reason">` + reason, `data-testid="action-form-answer"`, `data-testid="action-form-amend"`} {
		if !strings.Contains(page.Body, want) {
			t.Errorf("the task page lacks %s", want)
		}
	}
	if !strings.Contains(page.Body, "to answer its worker") {
		t.Error("the task page does not say it waits for an answer")
	}
	if q := ex.get("/queue"); !strings.Contains(q.Body, "Its worker says it cannot be done as specified: "+reason) {
		t.Errorf("the exec's queue does not show the claim:\n%s", q.Body)
	}
	board := ex.get("/agents")
	if !strings.Contains(board.Body, `data-testid="rank-bot-impossible">1<`) {
		t.Errorf("the ranking does not show bot's claim:\n%s", board.Body)
	}

	r := ex.post("/tasks/"+itoa64(tk.ID)+"/action/amend", url.Values{"brief": {"Add them; the spec wins."}, "back": {"/inbox"}})
	if r.Status != http.StatusSeeOther {
		t.Fatalf("amend: %d %s", r.Status, r.Body)
	}
	got, err := e.db.GetTask(ctx, tk.ID)
	must(t, err)
	if got.State != models.TaskAssigned || got.Brief != "Add them; the spec wins." || got.OpenImpossible() != nil {
		t.Fatalf("after amending: %s %q %+v", got.State, got.Brief, got.Questions)
	}
}
