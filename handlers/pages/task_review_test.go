package pages_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
)

// TestTaskPageReview: a task that proceeded past its artifact review with warnings
// shows them on its page, and a review's fix task links the task it fixes; a task
// with neither shows no review card.
func TestTaskPageReview(t *testing.T) {
	e := newEnv(t, "sqlite")
	e.team()
	reviewed := e.humanTask("Write the runbook", nil, models.TaskInProgress)
	plain := e.humanTask("Plain", nil, models.TaskPending)
	runner, err := e.svc.Agents.RunnerAgent(e.ctx())
	if err != nil {
		t.Fatal(err)
	}
	var fix *models.Task
	err = e.svc.Store().InTx(e.ctx(), func(tx models.Tx) error {
		r, err := tx.LockTask(e.ctx(), reviewed.ID)
		if err != nil {
			return err
		}
		r.ReviewWarnings = models.ExhaustedWarning(3, "- The rollback plan is missing.")
		if err := tx.UpdateTask(e.ctx(), r); err != nil {
			return err
		}
		fix, err = e.svc.Attempts.AddReviewFixTask(e.ctx(), tx, runner, r, models.ReviewFix{Round: 1, MaxRounds: 3, Findings: "- The rollback plan is missing."})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	b := e.browser().login("lead")
	pg := b.get("/tasks/" + itoa64(reviewed.ID))
	if pg.Status != 200 || !strings.Contains(pg.Body, `data-testid="task-review-warnings"`) || !strings.Contains(pg.Body, "The rollback plan is missing.") {
		t.Fatalf("reviewed task page %d lacks the warnings:\n%s", pg.Status, pg.Body)
	}
	pg = b.get("/tasks/" + itoa64(fix.ID))
	if !strings.Contains(pg.Body, `data-testid="task-review-fix-of"`) || !strings.Contains(pg.Body, `href="/tasks/`+itoa64(reviewed.ID)+`"`) {
		t.Fatalf("fix task page does not link the reviewed task:\n%s", pg.Body)
	}
	if pg = b.get("/tasks/" + itoa64(plain.ID)); strings.Contains(pg.Body, `data-testid="task-review"`) {
		t.Fatal("a task without a review shows the review card")
	}
}
