package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// reviewRounds returns the review.round events' data of task id, oldest first.
func (h *harness) reviewRounds(id int64) []map[string]any {
	h.t.Helper()
	evs, err := h.db.ListEvents(h.ctx, 0, 5000)
	must(h.t, err)
	var out []map[string]any
	for _, e := range evs {
		if e.Type == models.EventReviewRound && e.TaskID != nil && *e.TaskID == id {
			var d map[string]any
			must(h.t, json.Unmarshal(e.Data, &d))
			out = append(out, d)
		}
	}
	return out
}

// reviewBriefOf reads the review brief of attempt n of task id.
func (h *harness) reviewBriefOf(id int64, n int) string {
	h.t.Helper()
	b, err := os.ReadFile(filepath.Join(h.cfg.Workspaces.Root(), "meta", itoa(id), fmt.Sprintf("review-%d.md", n)))
	must(h.t, err)
	return string(b)
}

// fixTasks lists the fix tasks reviews added for task id, oldest first.
func (h *harness) fixTasks(goalID, id int64) []models.Task {
	h.t.Helper()
	all, err := h.db.ListTasks(h.ctx, models.TaskFilter{GoalID: goalID, Limit: 100})
	must(h.t, err)
	var out []models.Task
	for i := len(all) - 1; i >= 0; i-- {
		if r := all[i].ReviewOf; r != nil && *r == id {
			out = append(out, all[i])
		}
	}
	return out
}

// reviewedTask creates a goal and a task in it with a review that never passes.
func reviewedTask(h *harness, onExhausted string) (*models.Goal, *models.Task) {
	g := &models.Goal{Title: "reviewed work"}
	must(h.t, h.svc.Goals.CreateGoal(h.ctx, h.boss, g))
	c := fileContract()
	c.Review = &contract.Review{Role: "reviewer", When: []string{contract.ReviewAlways}, OnExhausted: onExhausted}
	return g, h.task("write the runbook", "developer", c, func(s *models.TaskSpec) { s.GoalID = &g.ID })
}

// TestReviewThreeRoundsProceedWithWarnings is the seed's review loop with real worker
// processes: REVIEW_FAIL in round 1 adds a fix task (findings in its brief, linked to
// the reviewed task and its goal, assigned by role) which works in the reviewed
// task's workspace; the review runs again after it (the worker does not), round 2
// fails the same way, and round 3, the last, fails too: on_exhausted
// proceed_with_warnings verifies the task with the outstanding findings appended as
// warnings. Every round's summary names status, findings and action.
func TestReviewThreeRoundsProceedWithWarnings(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			threeRoundsProceed(t, newHarness(t, d, nil))
		})
	}
}

func threeRoundsProceed(t *testing.T, h *harness) {
	h.worker("dev", "developer", script(t, "fix_append.sh"))
	h.worker("rev", "reviewer", script(t, "review_findings.sh"))
	g, task := reviewedTask(h, contract.OnExhaustedProceed)
	h.start()
	got := h.wait(task.ID, models.TaskVerified, models.TaskBlocked)
	if got.State != models.TaskVerified || got.AttemptsUsed != 0 {
		t.Fatalf("state %s, attempts used %d", got.State, got.AttemptsUsed)
	}
	if !strings.Contains(got.ReviewWarnings, "Round 3: the rollback plan is missing.") || !strings.Contains(got.ReviewWarnings, contract.OnExhaustedProceed) {
		t.Fatalf("warnings %q", got.ReviewWarnings)
	}
	atts := h.attempts(task.ID)
	if len(atts) != 3 || atts[0].Stage != models.StageReview || atts[1].Stage != models.StageReview || atts[2].Outcome != models.OutcomePassed {
		t.Fatalf("attempts %+v", atts)
	}
	fixes := h.fixTasks(g.ID, task.ID)
	if len(fixes) != 2 {
		t.Fatalf("%d fix tasks, want 2", len(fixes))
	}
	for i, f := range fixes {
		round := fmt.Sprintf("Round %d: the rollback plan is missing.", i+1)
		if f.State != models.TaskVerified || f.Role != "developer" || f.GoalID == nil || *f.GoalID != g.ID ||
			!strings.Contains(f.Brief, round) || !strings.HasPrefix(f.Title, fmt.Sprintf("[FIX %d] Fix: %s", task.ID, round)) {
			t.Fatalf("fix task %d: %+v", i+1, f)
		}
	}
	// The fixes worked where the reviewed task did: the last review saw both.
	last := h.reviewBriefOf(task.ID, 3)
	for _, f := range fixes {
		if !strings.Contains(last, fmt.Sprintf("fixed by task %d", f.ID)) {
			t.Fatalf("round 3 did not see fix %d:\n%s", f.ID, last)
		}
	}
	if !strings.Contains(last, "Review round 3 of 3.") || !strings.Contains(last, "Prior findings (round 2)") {
		t.Fatalf("round 3 brief:\n%s", last)
	}
	rounds := h.reviewRounds(task.ID)
	wantActions := []string{models.ReviewActionFixTask, models.ReviewActionFixTask, models.ReviewActionWarnings}
	if len(rounds) != 3 {
		t.Fatalf("review.round events %+v", rounds)
	}
	for i, r := range rounds {
		if r["action"] != wantActions[i] || r["status"] != "REVIEW_FAIL" || r["round"] != float64(i+1) || len(r["findings"].([]any)) != 2 {
			t.Fatalf("round %d event %+v", i+1, r)
		}
	}
	if r := rounds[0]; r["fix_task_id"] != float64(fixes[0].ID) {
		t.Fatalf("round 1 names fix task %v, want %d", r["fix_task_id"], fixes[0].ID)
	}
	var review models.CheckResult
	for _, c := range atts[2].Checks {
		if c.Stage == models.StageReview {
			review = c
		}
	}
	for _, want := range []string{"Review of the task, round 3 of 3", "- Status: REVIEW_FAIL", "  - Round 3: the error table has no owner column.", "- Action: " + models.ReviewActionWarnings} {
		if !strings.Contains(review.Diagnosis, want) {
			t.Fatalf("round 3 summary lacks %q:\n%s", want, review.Diagnosis)
		}
	}
}

// TestReviewThreeRoundsBlock: with on_exhausted block (the default) a review that
// never passes blocks the task after its third round, two fix tasks done, with stage
// review and the last findings for a person.
func TestReviewThreeRoundsBlock(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	h.worker("dev", "developer", script(t, "fix_append.sh"))
	h.worker("rev", "reviewer", script(t, "review_findings.sh"))
	g, task := reviewedTask(h, "")
	h.start()
	got := h.wait(task.ID, models.TaskVerified, models.TaskBlocked)
	if got.State != models.TaskBlocked || got.ReviewWarnings != "" {
		t.Fatalf("state %s warnings %q", got.State, got.ReviewWarnings)
	}
	if n := len(h.fixTasks(g.ID, task.ID)); n != 2 {
		t.Fatalf("%d fix tasks, want 2", n)
	}
	p := h.blockedPayload(task.ID)
	lastFail := p.Attempts[len(p.Attempts)-1]
	if len(p.Attempts) != 3 || lastFail.Stage != models.StageReview || !strings.Contains(lastFail.Failure, "Round 3: the rollback plan is missing.") ||
		!strings.Contains(lastFail.Failure, "- Action: "+models.ReviewActionBlocked) {
		t.Fatalf("payload %+v", p.Attempts)
	}
}
