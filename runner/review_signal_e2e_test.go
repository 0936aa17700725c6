package runner

import (
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// TestReviewOnlyIsNotReadFromTheFindings: whether the next attempt is the review
// alone is decided by what happened — a fix task of this task's review, verified since
// its last attempt — never by the words in the diagnosis, which holds the reviewer's
// free text. Here a one-round review fails with a finding reading "- Action: fix task
// added", so the task is blocked (no fix task); the exec retries it with guidance and
// the worker must run again, not the review alone on the unchanged work.
func TestReviewOnlyIsNotReadFromTheFindings(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	h.worker("dev", "developer", script(t, "fix_append.sh"))
	h.worker("rev", "reviewer", script(t, "review_phrase.sh"))
	g := &models.Goal{Title: "reviewed work"}
	must(t, h.svc.Goals.CreateGoal(h.ctx, h.boss, g))
	c := fileContract()
	c.Review = &contract.Review{Role: "reviewer", When: []string{contract.ReviewAlways}, MaxRounds: 1}
	task := h.task("write the runbook", "developer", c, func(s *models.TaskSpec) { s.GoalID = &g.ID })
	h.start()
	if got := h.wait(task.ID, models.TaskVerified, models.TaskBlocked); got.State != models.TaskBlocked {
		t.Fatalf("state %s, want blocked after the one round", got.State)
	}
	if n := len(h.fixTasks(g.ID, task.ID)); n != 0 {
		t.Fatalf("%d fix tasks for a review out of rounds", n)
	}
	_, err := h.svc.Tasks.TaskAction(h.ctx, h.boss, task.ID, models.ActRetry, models.ActionInput{Reason: "add the rollback plan"})
	must(t, err)
	h.wait(task.ID, models.TaskVerified, models.TaskBlocked)
	atts := h.attempts(task.ID)
	if len(atts) != 2 {
		t.Fatalf("attempts %+v", atts)
	}
	worked := false
	for _, c := range atts[1].Checks {
		worked = worked || c.Stage != models.StageReview
	}
	if !worked {
		t.Fatalf("the retry ran the review alone (the worker was skipped): checks %+v", atts[1].Checks)
	}
}

// TestReviewRetryAfterRoundsRanOutRunsTheWorker: a fix task verified in an earlier
// round does not make a later retry the review alone. Two rounds fail (the first adds
// a fix task, verified, the second runs out and blocks); the exec's retry runs the
// worker, since no fix was added since the last attempt.
func TestReviewRetryAfterRoundsRanOutRunsTheWorker(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	h.worker("dev", "developer", script(t, "fix_append.sh"))
	h.worker("rev", "reviewer", script(t, "review_findings.sh"))
	g := &models.Goal{Title: "reviewed work"}
	must(t, h.svc.Goals.CreateGoal(h.ctx, h.boss, g))
	c := fileContract()
	c.Review = &contract.Review{Role: "reviewer", When: []string{contract.ReviewAlways}, MaxRounds: 2}
	task := h.task("write the runbook", "developer", c, func(s *models.TaskSpec) { s.GoalID = &g.ID })
	h.start()
	if got := h.wait(task.ID, models.TaskVerified, models.TaskBlocked); got.State != models.TaskBlocked {
		t.Fatalf("state %s, want blocked after two rounds", got.State)
	}
	if f := h.fixTasks(g.ID, task.ID); len(f) != 1 || f[0].State != models.TaskVerified {
		t.Fatalf("fix tasks %+v", f)
	}
	atts := h.attempts(task.ID)
	if len(atts) != 2 || len(atts[1].Checks) != 1 || atts[1].Checks[0].Stage != models.StageReview {
		t.Fatalf("round 2 was not the review alone: %+v", atts)
	}
	_, err := h.svc.Tasks.TaskAction(h.ctx, h.boss, task.ID, models.ActRetry, models.ActionInput{Reason: "add the rollback plan"})
	must(t, err)
	h.waitFor("a third attempt to settle", func() bool {
		a := h.attempts(task.ID)
		return len(a) == 3 && a[2].FinishedAt != nil
	})
	worked := false
	for _, c := range h.attempts(task.ID)[2].Checks {
		worked = worked || c.Stage != models.StageReview
	}
	if !worked {
		t.Fatalf("the retry ran the review alone: checks %+v", h.attempts(task.ID)[2].Checks)
	}
}

// TestCancelledReviewFixWithRealWorkers: the exec cancels a review's fix task while
// its worker runs; the reviewed task is blocked for a person at once (not left in
// progress waiting for it), and a retry with guidance runs its worker again in full —
// no fix was verified — and its review's next round passes.
func TestCancelledReviewFixWithRealWorkers(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	h.worker("dev", "developer", script(t, "fix_slow.sh"))
	h.worker("rev", "reviewer", script(t, "review_once.sh"))
	g := &models.Goal{Title: "reviewed work"}
	must(t, h.svc.Goals.CreateGoal(h.ctx, h.boss, g))
	c := fileContract()
	c.Review = &contract.Review{Role: "reviewer", When: []string{contract.ReviewAlways}}
	task := h.task("write the runbook", "developer", c, func(s *models.TaskSpec) { s.GoalID = &g.ID })
	h.start()
	var fix models.Task
	h.waitFor("the fix task to run", func() bool {
		f := h.fixTasks(g.ID, task.ID)
		if len(f) == 1 && f[0].State == models.TaskInProgress {
			fix = f[0]
			return true
		}
		return false
	})
	_, err := h.svc.Tasks.TaskAction(h.ctx, h.boss, fix.ID, models.ActCancel, models.ActionInput{Reason: "not worth a task"})
	must(t, err)
	got, err := h.db.GetTask(h.ctx, task.ID)
	must(t, err)
	if got.State != models.TaskBlocked {
		t.Fatalf("reviewed task %s after its fix was cancelled, want blocked", got.State)
	}
	if p := h.blockedPayload(task.ID); p.Attempts[len(p.Attempts)-1].Stage != models.StageReview {
		t.Fatalf("blocked payload %+v", p.Attempts)
	}
	_, err = h.svc.Tasks.TaskAction(h.ctx, h.boss, task.ID, models.ActRetry, models.ActionInput{Reason: "add the rollback plan yourself"})
	must(t, err)
	if got := h.wait(task.ID, models.TaskVerified, models.TaskBlocked); got.State != models.TaskVerified {
		t.Fatalf("state %s after the retry", got.State)
	}
	atts := h.attempts(task.ID)
	worked := false
	for _, c := range atts[len(atts)-1].Checks {
		worked = worked || c.Stage != models.StageReview
	}
	if len(atts) != 2 || !worked {
		t.Fatalf("the retry did not run the worker: attempts %+v", atts)
	}
}
