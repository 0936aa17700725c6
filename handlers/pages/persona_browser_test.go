package pages_test

import (
	"context"
	"sort"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/models"
)

// walkPage is a page a persona visited: shot again at the phone size after the walk.
type walkPage struct{ name, path, ready string }

// phoneShots revisits pages in ctx's signed-in session at
// 390×844 and shoots each as phone-<name>, then goes back to 1280×800.
func phoneShots(t *testing.T, ctx context.Context, e *env, pages []walkPage) {
	t.Helper()
	run(t, ctx, "phone size", atScreen(screens[1]))
	for _, p := range pages {
		run(t, ctx, "phone "+p.name,
			chromedp.Navigate(e.srv.URL+p.path),
			chromedp.WaitVisible(chromedp.CSS(p.ready)),
			shot(t, "phone-"+p.name),
		)
	}
	run(t, ctx, "desktop size", atScreen(screens[0]))
}

// personaTab opens a session for name at 1280×800, shooting the login page at both
// sizes on the way, and signs in landing on path.
func personaTab(t *testing.T, e *env, name, path string) context.Context {
	t.Helper()
	ctx := chrome(t)
	run(t, ctx, "login at phone size",
		atScreen(screens[1]),
		chromedp.Navigate(e.srv.URL+"/login"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="login-form"]`)),
		shot(t, "phone-login"),
		atScreen(screens[0]),
	)
	signIn(t, ctx, e, name, path)
	return ctx
}

// TestBrowserPersonaWalks walks each persona's job to the end in real Chromium, one
// browser session per person: the exec clears a blocked task from "Waiting on you"
// (retry with guidance) and it leaves the queue; the lead sees a goal arrive live in
// the queue and verifies it on the goal page; an editor changes a template step's
// max attempts, a lead starts a run from the goal page and the new task's contract
// card (and the stored task) carries the change. Every page is shot at 1280×800 and
// 390×844.
func TestBrowserPersonaWalks(t *testing.T) {
	e := newBrowserEnv(t)
	e.agent("editor", models.KindHuman, "editor")
	t.Run("exec", func(t *testing.T) { walkExec(t, e) })
	t.Run("lead", func(t *testing.T) { walkLead(t, e) })
	t.Run("editor", func(t *testing.T) { walkEditor(t, e) })
}

// walkExec: the exec retries a blocked task from the queue with guidance.
func walkExec(t *testing.T, e *env) {
	bt := e.blockedTask("Walked blocked task", nil)
	item := `[data-testid="queue-item-blocked-` + itoa64(bt.ID) + `"]`
	ctx := personaTab(t, e, "exec", "/queue")
	run(t, ctx, "the blocked task waits on the exec",
		chromedp.WaitVisible(chromedp.CSS(item)),
		shot(t, "queue"),
		chromedp.SendKeys(chromedp.CSS(item+` [data-testid="queue-retry-reason"]`), "Write the report to out/"+itoa64(bt.ID)+".md first."),
		chromedp.Click(chromedp.CSS(item+` [data-testid="queue-retry"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="flash"]`)),
		shot(t, "queue-cleared"),
	)
	if eval[bool](t, ctx, `!!document.querySelector('`+item+`')`) {
		t.Fatal("the retried task is still in the exec's queue")
	}
	if s := e.state(bt.ID); s != models.TaskAssigned {
		t.Fatalf("after the retry the task is %s, want %s", s, models.TaskAssigned)
	}
	run(t, ctx, "the task page", chromedp.Navigate(e.srv.URL+"/tasks/"+itoa64(bt.ID)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="task-contract"]`)), shot(t, "task"))
	phoneShots(t, ctx, e, []walkPage{{"queue", "/queue", `[data-testid="nav-agent"]`},
		{"task", "/tasks/" + itoa64(bt.ID), `[data-testid="task-contract"]`}})
}

// walkLead: a goal becomes pending_verify while the lead watches the queue; it shows
// up without a reload and the lead verifies it on the goal page.
func walkLead(t *testing.T, e *env) {
	g := &models.Goal{Title: "Walked goal"}
	if err := e.svc.Goals.CreateGoal(e.ctx(), models.System, g); err != nil {
		t.Fatal(err)
	}
	tk := e.humanTask("Last task of the walked goal", &g.ID, models.TaskCompleted)
	item := `[data-testid="queue-item-goal_verify-` + itoa64(g.ID) + `"]`
	ctx := personaTab(t, e, "lead", "/queue")
	run(t, ctx, "watch the queue",
		chromedp.WaitVisible(chromedp.CSS(`[data-live-status][data-state="live"]`)),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[int](`window.__noReload = 1`)(ctx, tg)
			return err
		}),
		shot(t, "queue-before"),
	)
	if eval[bool](t, ctx, `!!document.querySelector('`+item+`')`) {
		t.Fatal("the goal is in the queue before it is pending_verify")
	}
	e.act("tester", tk.ID, models.ActVerify, models.ActionInput{Notes: "works"}) // the goal is pending_verify now
	waitJS(t, ctx, "the goal in the queue", `!!document.querySelector('`+item+`')`)
	if eval[int](t, ctx, `window.__noReload || 0`) != 1 {
		t.Fatal("the queue reloaded instead of updating live")
	}
	run(t, ctx, "open and verify the goal",
		shot(t, "queue-after"),
		chromedp.Click(chromedp.CSS(item+` [data-testid="queue-subject"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="goal-verify-form"]`)),
		shot(t, "goal"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="goal-verify-notes"]`), "Ran the integrated build end to end."),
		chromedp.Click(chromedp.CSS(`[data-testid="goal-verify"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="flash"]`)),
		shot(t, "goal-verified"),
	)
	if s := e.goalState(g.ID); s != models.GoalVerified {
		t.Fatalf("after the lead's verification the goal is %s", s)
	}
	phoneShots(t, ctx, e, []walkPage{{"queue", "/queue", `[data-testid="nav-agent"]`},
		{"goal", "/goals/" + itoa64(g.ID), `[data-testid="nav-agent"]`}})
}

// walkEditor: an editor raises step 1's max attempts to 5 in the template editor; the
// next run (started by a lead with the goal page's Start run) uses it.
func walkEditor(t *testing.T, e *env) {
	saveTemplate(t, &admEnv{e}, "walked", 2)
	g := &models.Goal{Title: "Goal of the walked run"}
	if err := e.svc.Goals.CreateGoal(e.ctx(), models.System, g); err != nil {
		t.Fatal(err)
	}
	ctx := personaTab(t, e, "editor", "/templates/walked")
	acceptDialogs(ctx) // a beforeunload question must not hang the walk
	field := `[data-testid="steps[0].completion.max_attempts"]`
	run(t, ctx, "edit step 1's max attempts",
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="step-summary-0"]`)),
		shot(t, "template"),
		chromedp.Click(chromedp.CSS(`[data-testid="step-summary-0"]`)),
		chromedp.WaitVisible(chromedp.CSS(field)),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[bool](`(document.querySelector('`+field+`').value = '', true)`)(ctx, tg)
			return err
		}),
		chromedp.SendKeys(chromedp.CSS(field), "5"),
		shot(t, "template-edited"),
		chromedp.Click(chromedp.CSS(`[data-testid="op-save"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="flash"]`)),
		shot(t, "template-saved"),
	)
	tpl, err := e.db.GetTemplate(e.ctx(), "walked", 0)
	if err != nil {
		t.Fatal(err)
	}
	if tpl.Version != 2 || tpl.Steps[0].Completion.MaxAttempts != 5 {
		t.Fatalf("saved version %d, step 1 max attempts %d", tpl.Version, tpl.Steps[0].Completion.MaxAttempts)
	}

	// A lead starts the next run from the goal page.
	lead := personaTab(t, e, "lead", "/goals/"+itoa64(g.ID))
	run(t, lead, "start a run",
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="goal-run-form"]`)),
		chromedp.SetValue(chromedp.CSS(`[data-testid="goal-run-template"]`), "walked"),
		chromedp.Click(chromedp.CSS(`[data-testid="goal-run"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="flash"]`)),
		shot(t, "lead-run-started"),
	)
	tasks, err := e.svc.Store().ListTasks(e.ctx(), models.TaskFilter{GoalID: g.ID, Limit: 10})
	if err != nil || len(tasks) != 2 {
		t.Fatalf("tasks of the run: %d, %v", len(tasks), err)
	}
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].ID < tasks[j].ID })
	first := tasks[0]
	if first.Contract.Completion.MaxAttempts != 5 {
		t.Fatalf("the run's first task has max attempts %d, want 5", first.Contract.Completion.MaxAttempts)
	}
	taskPath := "/tasks/" + itoa64(first.ID)
	run(t, ctx, "the new task's contract", chromedp.Navigate(e.srv.URL+taskPath),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="task-contract"]`)), shot(t, "task"))
	budget := eval[string](t, ctx, `(function(){
		var dt = Array.from(document.querySelectorAll('[data-testid="task-contract"] dt')).find(d => d.textContent.trim() === 'Attempt budget');
		return dt ? dt.nextElementSibling.textContent.trim() : '';
	})()`)
	if budget != "5" {
		t.Fatalf("the new task's contract card says attempt budget %q, want 5", budget)
	}
	phoneShots(t, ctx, e, []walkPage{{"template", "/templates/walked", `[data-testid="step-summary-0"]`},
		{"task", taskPath, `[data-testid="task-contract"]`}})
	phoneShots(t, lead, e, []walkPage{{"lead-goal", "/goals/" + itoa64(g.ID), `[data-testid="goal-run-form"]`}})
}
