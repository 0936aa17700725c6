package runner

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// TestParallelBatchReview is the seed's parallel batch note with real worker
// processes: two steps of a parallel group run at the same time once the step before
// is verified; the group is reviewed once, by the last of them to pass, over both
// tasks' descriptions and the union of their changed files, indexed by the group's
// first step; the review's REVIEW_FAIL adds a fix task for the batch; and the step
// after the group waits for the whole group, review included.
func TestParallelBatchReview(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, d, nil)
			h.worker("dev1", "developer", script(t, "fix_append.sh", "0.6"))
			h.worker("dev2", "developer", script(t, "fix_append.sh", "0.6"))
			h.worker("rev", "reviewer", script(t, "review_once.sh"))
			fc := fileContract().Completion
			vf := contract.Verification{Type: contract.VerifyVerifiable}
			rv := &contract.Review{Role: "reviewer", When: []string{contract.ReviewAlways}}
			tpl := &models.Template{Name: "batch", Steps: []models.Step{
				{Name: "plan", Role: "developer", Brief: "Plan the feature.", Completion: fc, Verification: vf},
				{Name: "api", Role: "developer", Brief: "Build the API endpoint.", Completion: fc, Verification: vf, Review: rv, Parallel: "build"},
				{Name: "ui", Role: "developer", Brief: "Build the settings page.", Completion: fc, Verification: vf, Review: rv, Parallel: "build"},
				{Name: "ship", Role: "developer", Brief: "Ship it.", Completion: contract.Completion{Type: contract.CompletionNone}, Verification: vf},
			}}
			must(t, h.svc.Templates.SaveTemplate(h.ctx, h.boss, tpl))
			g := &models.Goal{Title: "feature"}
			must(t, h.svc.Goals.CreateGoal(h.ctx, h.boss, g))
			_, tasks, err := h.svc.Templates.StartRun(h.ctx, h.boss, g.ID, "batch", 0, nil)
			must(t, err)
			plan, api, ui, ship := tasks[0], tasks[1], tasks[2], tasks[3]
			if !slices.Equal(api.DependsOn, []int64{plan.ID}) || !slices.Equal(ui.DependsOn, []int64{plan.ID}) ||
				!slices.Equal(ship.DependsOn, []int64{api.ID, ui.ID}) {
				t.Fatalf("dependencies: api %v ui %v ship %v", api.DependsOn, ui.DependsOn, ship.DependsOn)
			}
			h.start()
			h.wait(ship.ID, models.TaskVerified, models.TaskBlocked)
			var first [2]models.Attempt
			for i, id := range []int64{api.ID, ui.ID} {
				first[i] = h.attempts(id)[0]
			}
			if !first[0].StartedAt.Before(*first[1].FinishedAt) || !first[1].StartedAt.Before(*first[0].FinishedAt) {
				t.Fatalf("the group's steps did not run at the same time: %v-%v and %v-%v",
					first[0].StartedAt, first[0].FinishedAt, first[1].StartedAt, first[1].FinishedAt)
			}
			// One review for the batch, by the task that passed last.
			reviewer, other := api, ui
			if len(h.reviewRounds(api.ID)) == 0 {
				reviewer, other = ui, api
			}
			if n := len(h.reviewRounds(other.ID)); n != 0 {
				t.Fatalf("both tasks of the group were reviewed (%d rounds on task %d)", n, other.ID)
			}
			var deferred bool
			for _, c := range h.attempts(other.ID)[0].Checks {
				deferred = deferred || (c.Stage == models.StageReview && c.Verdict == models.VerdictSkipped && strings.HasPrefix(c.Diagnosis, batchDeferred))
			}
			if !deferred {
				t.Fatalf("task %d's review was not left to its batch: %+v", other.ID, h.attempts(other.ID)[0].Checks)
			}
			rounds := h.reviewRounds(reviewer.ID)
			if len(rounds) != 2 || rounds[0]["index"] != float64(2) || rounds[0]["action"] != models.ReviewActionFixTask || rounds[1]["status"] != "REVIEW_PASS" {
				t.Fatalf("review rounds %+v", rounds)
			}
			atts := h.attempts(reviewer.ID)
			if len(atts) != 3 { // the work, the batch's first review, the review after the fix
				t.Fatalf("attempts of the reviewing task %+v", atts)
			}
			checkBatchReviewBrief(t, h, reviewer, api, ui, atts[1])
			fixes := h.fixTasks(g.ID, reviewer.ID)
			if len(fixes) != 1 || fixes[0].State != models.TaskVerified || !strings.Contains(fixes[0].Brief, "Build the API endpoint.") ||
				!strings.Contains(fixes[0].Brief, "Build the settings page.") || !strings.Contains(fixes[0].Brief, fmt.Sprintf("out/%d.md", other.ID)) {
				t.Fatalf("fix tasks %+v", fixes)
			}
			// The step after the group waited for the whole group, review included.
			rt := h.wait(reviewer.ID, models.TaskVerified)
			if s := h.attempts(ship.ID)[0].StartedAt; s.Before(*rt.VerifiedAt) {
				t.Fatalf("ship started at %v, before the batch passed its review at %v", s, rt.VerifiedAt)
			}
		})
	}
}

// checkBatchReviewBrief checks that the one review of the batch was briefed on both
// steps of the group and that its summary names the step it is indexed by; split
// out of TestParallelBatchReview to keep that test within the length limit.
func checkBatchReviewBrief(t *testing.T, h *harness, reviewer, api, ui models.Task, review models.Attempt) {
	t.Helper()
	brief := h.reviewBriefOf(reviewer.ID, 2)
	for _, want := range []string{"parallel batch (steps 2-3), indexed by step 2", "Build the API endpoint.", "Build the settings page.",
		fmt.Sprintf("out/%d.md", api.ID), fmt.Sprintf("out/%d.md", ui.ID), fmt.Sprintf("(step 2): api"), fmt.Sprintf("(step 3): ui")} {
		if !strings.Contains(brief, want) {
			t.Fatalf("batch review brief lacks %q:\n%s", want, brief)
		}
	}
	for _, c := range review.Checks {
		if c.Stage == models.StageReview && !strings.HasPrefix(c.Diagnosis, "Review of step 2, round 1 of 3") {
			t.Fatalf("summary %q", c.Diagnosis)
		}
	}
}
