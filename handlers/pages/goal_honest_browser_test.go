package pages_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// fakeLander lands by remembering: a task it landed reads as merged.
type fakeLander struct {
	mu     sync.Mutex
	merged map[int64]bool
}

// Land marks t merged.
func (f *fakeLander) Land(_ context.Context, t *models.Task, _ *models.Agent) (models.Landed, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.merged[t.ID] = true
	return models.Landed{Target: "main", Commit: t.Commit, FastForward: true}, nil
}

// Inspect reports t's branch at its verified commit, merged once landed.
func (f *fakeLander) Inspect(_ context.Context, t *models.Task, _ *models.Agent) (models.BranchReport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return models.BranchReport{Branch: t.Branch, Base: t.Base, Commit: t.Commit, Target: "main", Ahead: 1, TipVerified: true, Merged: f.merged[t.ID]}, nil
}

// verifiedGoal is a verified goal of one verified task; with a commit, the task has a
// branch of its own at that commit.
func verifiedGoal(t *testing.T, e *env, title, commit string) *models.Goal {
	t.Helper()
	g := e.pendingGoal(title)
	if commit != "" {
		tasks, err := e.svc.Store().ListTasks(e.ctx(), models.TaskFilter{GoalID: g.ID})
		must(t, err)
		setBranch(t, e, tasks[0].ID, "countersign/task-"+itoa64(tasks[0].ID), "base", commit)
	}
	if _, err := e.svc.Goals.VerifyGoal(e.ctx(), e.agents["lead"], g.ID, "tried it"); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestBrowserGoalMergeOnlyWhenPossible: a lead is offered "Merge goal" only when a
// merge can land something, and otherwise reads why not: a verified goal without a
// commit has nothing verified to merge, an open goal has tasks still open, and a
// merged goal is already merged.
func TestBrowserGoalMergeOnlyWhenPossible(t *testing.T) {
	t.Parallel()
	e := newBrowserEnvWith(t, envOptions{lander: &fakeLander{merged: map[int64]bool{}}})
	nothing := verifiedGoal(t, e, "Verified, no commit", "")
	work := verifiedGoal(t, e, "Verified with a commit", strings.Repeat("ab", 20))
	open := &models.Goal{Title: "Still open"}
	must(t, e.svc.Goals.CreateGoal(e.ctx(), models.System, open))
	e.humanTask("open work", &open.ID, models.TaskAssigned)

	ctx := chrome(t)
	signIn(t, ctx, e, "lead", "/goals/"+itoa64(nothing.ID))
	whyNot := func(id int64, want string) {
		t.Helper()
		run(t, ctx, "goal "+itoa64(id), chromedp.Navigate(e.srv.URL+"/goals/"+itoa64(id)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="page-title"]`)), shot(t, "goal-"+itoa64(id)))
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="goal-merge"]').length`); n != 0 {
			t.Errorf("goal %d offers Merge goal, which can only fail", id)
		}
		if got := textNow(t, ctx, `[data-testid="goal-merge-why-not"]`); !strings.Contains(got, want) {
			t.Errorf("goal %d says %q, want %q", id, got, want)
		}
	}
	whyNot(nothing.ID, "Nothing verified to merge")
	whyNot(open.ID, "tasks still open")

	run(t, ctx, "merge the goal with a commit",
		chromedp.Navigate(e.srv.URL+"/goals/"+itoa64(work.ID)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="goal-merge"]`)),
		shot(t, "mergeable"),
		chromedp.Click(chromedp.CSS(`[data-testid="goal-merge"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="flash"]`)))
	if got := text(t, ctx, `[data-testid="flash"]`); !strings.Contains(got, "Merged the verified work of 1 task") {
		t.Fatalf("after the merge: %q", got)
	}
	whyNot(work.ID, "Already merged")
}

// TestBrowserGoalChartsHonest: a goal one day old shows no burn-down of one bar but
// says there is not enough history yet, no table of stages nothing failed at, and
// "1 task" (not "1 tasks"); a goal with history and failures shows its chart and only
// the stages with failures.
func TestBrowserGoalChartsHonest(t *testing.T) {
	t.Parallel()
	e := newBrowserEnv(t)
	fresh := &models.Goal{Title: "Fresh goal"}
	must(t, e.svc.Goals.CreateGoal(e.ctx(), models.System, fresh))
	e.humanTask("the only task", &fresh.ID, models.TaskAssigned)
	h := seedScores(t, e)

	ctx := chrome(t)
	signIn(t, ctx, e, "lead", "/goals/"+itoa64(fresh.ID))
	run(t, ctx, "fresh goal", chromedp.WaitVisible(chromedp.CSS(`[data-testid="goal-burndown"]`)), shot(t, "fresh"))
	if got := textNow(t, ctx, `[data-testid="goal-burndown-empty"]`); !strings.Contains(got, "Not enough history yet") {
		t.Errorf("a goal one day old says %q about its burn-down", got)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="chart-burndown"], [data-testid="goal-stages"]').length`); n != 0 {
		t.Errorf("a goal without history shows %d charts or stage tables", n)
	}
	if got := text(t, ctx, `[data-testid="goal-group-assigned"] h3 a`); got != "1 task" {
		t.Errorf("group heading %q, want %q", got, "1 task")
	}

	run(t, ctx, "goal with history", chromedp.Navigate(e.srv.URL+"/goals/"+itoa64(h.goal)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chart-burndown"]`)), shot(t, "history"))
	counts := eval[[]int](t, ctx, `[...document.querySelectorAll('[data-testid="goal-stages"] tbody tr')].map(r => +r.dataset.count)`)
	if len(counts) == 0 {
		t.Fatal("the failing stages are not listed")
	}
	for _, n := range counts {
		if n == 0 {
			t.Fatalf("a stage without failures is listed: %v", counts)
		}
	}
}

// textNow is the trimmed text of the element sel finds now, "" when there is none
// (text waits for it instead).
func textNow(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	js := `(function(){const el=document.querySelector(` + "`" + sel + "`" + `);return el?el.textContent.trim():""})()`
	return eval[string](t, ctx, js)
}

// overriddenTask is a blocked task of goal g that an exec accepted without its checks
// passing, with a drift item in the inbox (so the inbox shows its state too).
func overriddenTask(t *testing.T, e *env, g *models.Goal) *models.Task {
	t.Helper()
	bt := e.blockedTask("Accepted anyway", &g.ID)
	e.act("exec", bt.ID, models.ActAccept, models.ActionInput{Reason: "good enough for the demo"})
	must(t, e.db.InTx(e.ctx(), func(tx models.Tx) error {
		return tx.CreateInboxItem(e.ctx(), &models.InboxItem{Kind: models.InboxDrift, TaskID: bt.ID, GoalID: &g.ID,
			Title: "Its work changed after it was verified", CreatedAt: time.Now()})
	}))
	return bt
}

// TestBrowserOverrideMarkedEverywhere: a task accepted without passing its checks
// reads "verified (override)", never plain "verified", in its header, in the task
// list, in its goal's task groups, in its goal's workflow steps and in the inbox; a
// task verified by its checks still reads "verified".
func TestBrowserOverrideMarkedEverywhere(t *testing.T) {
	t.Parallel()
	e := newBrowserEnv(t)
	g := &models.Goal{Title: "Goal with an override"}
	must(t, e.svc.Goals.CreateGoal(e.ctx(), models.System, g))
	ov := overriddenTask(t, e, g)
	plain := e.humanTask("Verified by its checks", &g.ID, models.TaskVerified)
	overriddenStep(t, e, g)

	ctx := chrome(t)
	signIn(t, ctx, e, "exec", "/tasks/"+itoa64(ov.ID))
	places := []struct{ name, path, sel string }{
		{"header", "/tasks/" + itoa64(ov.ID), `[data-testid="task-state"]`},
		{"task list", "/tasks", `[data-testid="task-row-` + itoa64(ov.ID) + `"]`},
		{"goal tasks", "/goals/" + itoa64(g.ID), `[data-testid="goal-group-verified"] [data-testid="task-row-` + itoa64(ov.ID) + `"]`},
		{"goal steps", "/goals/" + itoa64(g.ID), `[data-testid="goal-step-1"]`},
		{"inbox", "/inbox", `[data-task-id="` + itoa64(ov.ID) + `"] .card-header`},
	}
	for _, p := range places {
		run(t, ctx, p.name, chromedp.Navigate(e.srv.URL+p.path), chromedp.WaitVisible(chromedp.CSS(p.sel)), shot(t, strings.ReplaceAll(p.name, " ", "-")))
		if got := textNow(t, ctx, p.sel+` [data-override="true"]`); got != "verified (override)" {
			t.Errorf("%s: the override reads %q", p.name, got)
		}
	}
	run(t, ctx, "plain", chromedp.Navigate(e.srv.URL+"/tasks/"+itoa64(plain.ID)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="task-state"]`)))
	if got := text(t, ctx, `[data-testid="task-state"]`); got != "verified" {
		t.Errorf("a task verified by its checks reads %q", got)
	}
}

// overriddenStep starts a one-step workflow run in g and records its task as
// accepted without passing its checks (as an exec's accept leaves it).
func overriddenStep(t *testing.T, e *env, g *models.Goal) {
	t.Helper()
	lead := e.agents["lead"]
	tpl := &models.Template{Name: "one-step", Steps: []models.Step{{Name: "build", Role: "developer", Brief: "Build it.",
		Completion: contract.Completion{Type: contract.CompletionNone}, Verification: contract.Verification{Type: contract.VerifySkip}}}}
	must(t, e.svc.Templates.SaveTemplate(e.ctx(), lead, tpl))
	_, tasks, err := e.svc.Templates.StartRun(e.ctx(), lead, g.ID, "one-step", 0, nil)
	must(t, err)
	must(t, e.db.InTx(e.ctx(), func(tx models.Tx) error {
		lt, err := tx.LockTask(e.ctx(), tasks[0].ID)
		if err != nil {
			return err
		}
		lt.State, lt.Override = models.TaskVerified, true
		return tx.UpdateTask(e.ctx(), lt)
	}))
}

// TestBrowserBudgetCardSaysStoppedOnlyWhenStopped: a task blocked by its checks, with
// no budget, does not say a budget stopped it; a task a budget stopped does.
func TestBrowserBudgetCardSaysStoppedOnlyWhenStopped(t *testing.T) {
	t.Parallel()
	e := newBrowserEnv(t)
	checks := e.blockedTask("Blocked by its checks", nil)
	cent := 0.01
	capped, err := e.svc.Tasks.CreateTask(e.ctx(), models.System, models.TaskSpec{Title: "Capped", Brief: "b", Role: "developer", Assignee: "bot",
		Contract: contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone, DoneToken: "DONE"}, Budget: &contract.Budget{MaxCostUSD: &cent}}})
	must(t, err)
	e.act("runner", capped.ID, models.ActStart, models.ActionInput{})
	runner, err := e.svc.Agents.RunnerAgent(e.ctx())
	must(t, err)
	must(t, e.db.InTx(e.ctx(), func(tx models.Tx) error {
		lt, err := tx.LockTask(e.ctx(), capped.ID)
		if err != nil {
			return err
		}
		return e.svc.Attempts.BlockOnBudget(e.ctx(), tx, runner, lt, models.BudgetLimit{Scope: "task " + itoa64(capped.ID), Budget: *lt.Contract.Budget, Spend: models.Spend{CostUSD: 0.02}})
	}))

	ctx := chrome(t)
	signIn(t, ctx, e, "exec", "/tasks/"+itoa64(checks.ID))
	const stopped = "A budget stopped this work"
	run(t, ctx, "blocked by its checks", chromedp.WaitVisible(chromedp.CSS(`[data-testid="budget-form"]`)), shot(t, "checks"))
	if got := text(t, ctx, `[data-testid="task-budget"]`); strings.Contains(got, stopped) {
		t.Errorf("a task without a budget says %q", got)
	}
	run(t, ctx, "stopped by its budget", chromedp.Navigate(e.srv.URL+"/tasks/"+itoa64(capped.ID)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="budget-form"]`)), shot(t, "budget"))
	if got := text(t, ctx, `[data-testid="task-budget"]`); !strings.Contains(got, stopped) {
		t.Errorf("a task its budget stopped does not say so: %q", got)
	}
}
