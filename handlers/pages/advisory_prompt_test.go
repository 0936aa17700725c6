package pages_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// promptAll turns prompt_for_advisory on and creates advisory tasks with the titles,
// each waiting in the inbox; it returns the tasks and their items' ids.
func (e *env) promptAll(titles ...string) ([]*models.Task, []int64) {
	e.t.Helper()
	t := e.t.(*testing.T)
	ctx := context.Background()
	r, err := e.svc.Templates.Rules(ctx)
	must(t, err)
	r.PromptForAdvisory = true
	must(t, e.svc.Templates.SaveRules(ctx, e.agents["lead"], &r))
	var tasks []*models.Task
	var items []int64
	for _, title := range titles {
		tk, err := e.svc.Tasks.CreateTask(ctx, e.agents["lead"], models.TaskSpec{Title: title, Role: "developer", Assignee: "dev"})
		must(t, err)
		its, err := e.db.ListInbox(ctx, models.InboxFilter{TaskID: tk.ID, Kind: models.InboxAdvisoryPrompt})
		must(t, err)
		if len(its) != 1 {
			t.Fatalf("task %d: %d advisory prompts", tk.ID, len(its))
		}
		tasks, items = append(tasks, tk), append(items, its[0].ID)
	}
	return tasks, items
}

// TestAdvisoryPromptForms: the inbox shows the held task with its three forms to an
// exec and none to a developer, whose post is refused (403, lead_or_exec); criteria
// that are not "activity: description" or fail validation re-render the form with
// the error (422) and change nothing.
func TestAdvisoryPromptForms(t *testing.T) {
	e := newEnv(t, "sqlite")
	e.team()
	tasks, _ := e.promptAll("Investigate why checkout is slow")
	id := advID(tasks[0].ID)
	dev := e.browser().login("dev")
	if pg := dev.get("/inbox"); !strings.Contains(pg.Body, `data-testid="advisory-prompt"`) || strings.Contains(pg.Body, `data-testid="advisory-proceed"`) {
		t.Fatal("a developer sees no prompt, or sees its forms")
	}
	before := e.eventCount()
	if pg := dev.post("/tasks/"+id+"/advisory/proceed", nil); pg.Status != http.StatusForbidden || !strings.Contains(pg.Body, "lead_or_exec") {
		t.Fatalf("developer proceeding: %d %s", pg.Status, pg.Body)
	}
	ex := e.browser().login("exec")
	pg := ex.get("/inbox")
	for _, want := range []string{"advisory-proceed", "advisory-make_verifiable", "advisory-cancel", "prompt_for_advisory"} {
		if !strings.Contains(pg.Body, want) {
			t.Fatalf("inbox lacks %s", want)
		}
	}
	pg = ex.post("/tasks/"+id+"/advisory/make_verifiable", url.Values{"criteria": {"unit-test tests pass"}})
	if pg.Status != http.StatusUnprocessableEntity || !strings.Contains(pg.Body, "line 1: write it as activity: description") {
		t.Fatalf("criteria without colon: %d", pg.Status)
	}
	pg = ex.post("/tasks/"+id+"/advisory/make_verifiable", url.Values{"criteria": {"unit-test: tests pass\nlint:"}})
	if pg.Status != http.StatusUnprocessableEntity || !strings.Contains(pg.Body, "line 2 description is required") {
		t.Fatalf("criterion without description: %d", pg.Status)
	}
	if e.eventCount() != before {
		t.Fatal("a refused resolution wrote events")
	}
	got, err := e.db.GetTask(context.Background(), tasks[0].ID)
	must(t, err)
	if got.Contract.Verification.Type != contract.VerifyAdvisory {
		t.Fatal("a refused make_verifiable changed the contract")
	}
}

// TestAdvisoryPromptBrowser: in headless Chromium the exec sees three advisory tasks
// waiting, each with its three actions, and clicks them: proceed, make verifiable
// (after a refused edit), cancel.
func TestAdvisoryPromptBrowser(t *testing.T) {
	t.Parallel()
	e := newBrowserEnv(t)
	tasks, items := e.promptAll("Investigate why checkout is slow", "Research onboarding flows", "Explore caching options")
	ctx := chrome(t)
	acceptDialogs(ctx) // Cancel asks first (data-confirm)
	signIn(t, ctx, e, "exec", "/inbox")
	in := func(i int, testid string) string {
		return `[data-testid="inbox-item-` + advID(items[i]) + `"] [data-testid="` + testid + `"]`
	}
	run(t, ctx, "the waiting advisory tasks",
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="inbox-group-advisory_prompt"]`)),
		chromedp.WaitVisible(chromedp.CSS(in(0, "advisory-proceed"))),
		chromedp.WaitVisible(chromedp.CSS(in(0, "advisory-make_verifiable"))),
		chromedp.WaitVisible(chromedp.CSS(in(0, "advisory-cancel"))),
		shot(t, "waiting"),
		chromedp.Click(chromedp.CSS(in(0, "advisory-proceed"))),
		chromedp.WaitNotPresent(chromedp.CSS(`[data-testid="inbox-item-`+advID(items[0])+`"]`)),
	)
	run(t, ctx, "make verifiable, refused first",
		chromedp.SetValue(chromedp.CSS(in(1, "advisory-criteria")), "unit-test the flow works"),
		chromedp.Click(chromedp.CSS(in(1, "advisory-make_verifiable"))),
		chromedp.WaitVisible(chromedp.CSS(`.field-error`)),
		shot(t, "refused-criteria"),
	)
	if msg := text(t, ctx, `.field-error`); !strings.Contains(msg, "activity: description") {
		t.Fatalf("field error %q", msg)
	}
	run(t, ctx, "make verifiable",
		chromedp.SetValue(chromedp.CSS(in(1, "advisory-criteria")), "unit-test: the onboarding flow test passes"),
		chromedp.Click(chromedp.CSS(in(1, "advisory-make_verifiable"))),
		chromedp.WaitNotPresent(chromedp.CSS(`[data-testid="inbox-item-`+advID(items[1])+`"]`)),
		chromedp.Click(chromedp.CSS(in(2, "advisory-cancel"))),
		chromedp.WaitNotPresent(chromedp.CSS(`[data-testid="inbox-item-`+advID(items[2])+`"]`)),
		shot(t, "resolved"),
	)
	bg := context.Background()
	a, err := e.db.GetTask(bg, tasks[0].ID)
	must(t, err)
	b, err := e.db.GetTask(bg, tasks[1].ID)
	must(t, err)
	c, err := e.db.GetTask(bg, tasks[2].ID)
	must(t, err)
	open, err := e.db.ListInbox(bg, models.InboxFilter{Kind: models.InboxAdvisoryPrompt})
	must(t, err)
	if a.Contract.Verification.Type != contract.VerifyAdvisory || b.Contract.Verification.Type != contract.VerifyVerifiable ||
		len(b.Contract.Verification.Criteria) != 1 || b.Contract.Verification.Criteria[0].Description != "the onboarding flow test passes" ||
		c.State != models.TaskCancelled || len(open) != 0 {
		t.Fatalf("after the clicks: %s / %+v / %s, %d open", a.Contract.Verification.Type, b.Contract.Verification, c.State, len(open))
	}
	// The proceeded task may start now.
	if _, err := e.svc.Tasks.TaskAction(bg, e.agents["dev"], a.ID, models.ActStart, models.ActionInput{}); err != nil {
		t.Fatalf("start after proceeding: %v", err)
	}
}

func advID(id int64) string { return strconv.FormatInt(id, 10) }
