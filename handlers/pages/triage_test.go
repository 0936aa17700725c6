package pages_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// TestInboxShowsTheTriage: a blocked task the triage escalated shows the triage's
// summary and recommended action on its inbox item, escaped; one whose triage failed
// says so.
func TestInboxShowsTheTriage(t *testing.T) {
	e := newEnv(t, "sqlite")
	e.team()
	ctx := context.Background()
	block := func(title string, tri *models.Triage) *models.Task {
		tk, err := e.svc.CreateTask(ctx, models.System, models.TaskSpec{Title: title, Brief: "b", Role: "developer", Assignee: "bot"})
		must(t, err)
		e.act("runner", tk.ID, models.ActStart, models.ActionInput{})
		runner, _ := e.svc.RunnerAgent(ctx)
		must(t, e.svc.Store().InTx(ctx, func(tx models.Tx) error {
			lt, err := tx.LockTask(ctx, tk.ID)
			if err != nil {
				return err
			}
			lt.Triage = tri
			return e.svc.BlockTask(ctx, tx, runner, lt, []models.BlockedAttempt{{Attempt: 1, Stage: models.StageVerify, Failure: "exit 1"}})
		}))
		return tk
	}
	block("Escalated", &models.Triage{Status: models.TriageEscalate, At: time.Now(), Summary: "The spec <b>contradicts</b> the tests.",
		Recommend: models.RecommendReassign, Role: "architect"})
	block("Unanswered", &models.Triage{Status: models.TriageFailed, At: time.Now(), Error: "malformed triage decision: no JSON"})

	pg := e.browser().login("exec").get("/inbox")
	for _, want := range []string{`data-testid="inbox-triage" data-state="escalate"`, "The spec &lt;b&gt;contradicts&lt;/b&gt; the tests.",
		"reassign to the role architect", `data-state="failed"`, "The triage gave no usable answer: malformed triage decision"} {
		if !strings.Contains(pg.Body, want) {
			t.Fatalf("the inbox lacks %q", want)
		}
	}
}
