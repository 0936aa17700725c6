package pages_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// box is an element's place on the page.
type box struct{ Top, Left, Bottom, Right float64 }

// TestBrowserGoalParallelSteps: in headless Chromium the goal page shows a workflow
// run step by step, the two steps of its parallel group side by side (same row, one
// right of the other) between the step before and the step after, which sit on rows
// of their own; the fix task a review added is linked from its step.
func TestBrowserGoalParallelSteps(t *testing.T) {
	t.Parallel()
	e := newBrowserEnv(t)
	ctx := e.ctx()
	lead := e.agents["lead"]
	step := func(name, group string) models.Step {
		return models.Step{Name: name, Role: "developer", Brief: "Do " + name + ".", Parallel: group,
			Completion: contract.Completion{Type: contract.CompletionNone}, Verification: contract.Verification{Type: contract.VerifySkip}}
	}
	tpl := &models.Template{Name: "side-by-side", Steps: []models.Step{step("plan", ""), step("api", "build"), step("ui", "build"), step("ship", "")}}
	if err := e.svc.Templates.SaveTemplate(ctx, lead, tpl); err != nil {
		t.Fatal(err)
	}
	g := &models.Goal{Title: "Parallel goal"}
	if err := e.svc.Goals.CreateGoal(ctx, lead, g); err != nil {
		t.Fatal(err)
	}
	_, tasks, err := e.svc.Templates.StartRun(ctx, lead, g.ID, "side-by-side", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	runner, err := e.svc.Agents.RunnerAgent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var fix *models.Task
	err = e.svc.Store().InTx(ctx, func(tx models.Tx) error {
		api, err := tx.LockTask(ctx, tasks[1].ID)
		if err != nil {
			return err
		}
		fix, err = e.svc.Attempts.AddReviewFixTask(ctx, tx, runner, api, models.ReviewFix{Index: 2, Round: 1, MaxRounds: 3,
			Findings: "- The endpoint has no rate limit.", Tasks: []string{"api"}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	bc := chrome(t)
	signIn(t, bc, e, "lead", "/goals/"+itoa64(g.ID))
	run(t, bc, "goal steps",
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="goal-steps"]`)),
		chromedp.ScrollIntoView(chromedp.CSS(`[data-testid="goal-steps"]`)),
		shot(t, "goal-parallel-steps"))
	boxes := map[int]box{}
	for i := 1; i <= 4; i++ {
		b, err := chromedp.Run(bc, chromedp.Evaluate[box](`(function(){const r=document.querySelector('[data-testid="goal-step-`+itoa64(int64(i))+`"]').getBoundingClientRect();return {Top:r.top,Left:r.left,Bottom:r.bottom,Right:r.right};})()`))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		boxes[i] = b
	}
	api, ui := boxes[2], boxes[3]
	if d := api.Top - ui.Top; d > 1 || d < -1 || ui.Left < api.Right-1 {
		t.Fatalf("the parallel steps are not side by side: api %+v ui %+v", api, ui)
	}
	if boxes[1].Bottom > api.Top+1 || boxes[4].Top < api.Bottom-1 || boxes[4].Top < ui.Bottom-1 {
		t.Fatalf("steps out of order: %+v", boxes)
	}
	if got := text(t, bc, `[data-testid="goal-stage-group-2"]`); got != "Parallel group build: these steps run at the same time" {
		t.Fatalf("group label %q", got)
	}
	if got := text(t, bc, `[data-testid="goal-step-2"] [data-testid="goal-step-fix-`+itoa64(fix.ID)+`"]`); got == "" {
		t.Fatal("the review's fix task is not shown on its step")
	}
}
