package pages_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// advisoryTask creates a worker task that the runner passed as advisory: verified,
// with its output waiting in the inbox for a look. It returns the task and the item.
func (e *env) advisoryTask(title string) (*models.Task, models.InboxItem) {
	e.t.Helper()
	t, err := e.svc.Tasks.CreateTask(e.ctx(), models.System, models.TaskSpec{Title: title, Brief: "Brief of " + title,
		Role: "developer", Assignee: "bot",
		Contract: contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, Path: "out/{task_id}.md", MaxAttempts: 2}}})
	if err != nil {
		e.t.Fatal(err)
	}
	e.act("runner", t.ID, models.ActStart, models.ActionInput{})
	runner, _ := e.svc.Agents.RunnerAgent(e.ctx())
	err = e.svc.Store().InTx(e.ctx(), func(tx models.Tx) error {
		lt, err := tx.LockTask(e.ctx(), t.ID)
		if err != nil {
			return err
		}
		return e.svc.Attempts.RunnerPass(e.ctx(), tx, runner, lt, "Summary of "+title, "", true)
	})
	if err != nil {
		e.t.Fatal(err)
	}
	items, err := e.svc.Store().ListInbox(e.ctx(), models.InboxFilter{TaskID: t.ID, Kind: models.InboxAdvisory})
	if err != nil || len(items) != 1 {
		e.t.Fatalf("advisory items of task %d: %v %v", t.ID, items, err)
	}
	return t, items[0]
}

// inboxItemOf returns the inbox item for a task: the first one, open or resolved.
func (e *env) inboxItemOf(taskID int64) models.InboxItem {
	e.t.Helper()
	items, err := e.svc.Store().ListInbox(e.ctx(), models.InboxFilter{TaskID: taskID, IncludeResolved: true})
	if err != nil || len(items) == 0 {
		e.t.Fatalf("inbox items of task %d: %v %v", taskID, items, err)
	}
	return items[0]
}

// card returns the markup of one inbox item's card on the inbox page, "" if absent.
func card(body string, itemID int64) string {
	i := strings.Index(body, `data-testid="inbox-item-`+itoa64(itemID)+`"`)
	if i < 0 {
		return ""
	}
	rest := body[i:]
	if j := strings.Index(rest, "</section>"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// TestInboxDismiss: the Dismiss button is on advisory items only and only for those
// who may use it, and each item's form posts to that item's route; dismissing needs
// the CSRF token and the role, resolves that one item (not the other open advisory
// item of the same task) with a notice, and a second dismissal, one of a blocked
// item or of an unknown item is refused. The old task route is gone.
func TestInboxDismiss(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	e.team()
	at, adv := e.advisoryTask("Investigate the slow API")
	// A second open advisory item of the same task (as after a reopen and a new pass).
	adv2 := &models.InboxItem{Kind: models.InboxAdvisory, TaskID: at.ID, Title: "Advisory output, second pass",
		Payload: []byte(`{"summary":"second"}`)}
	if err := e.svc.Store().CreateInboxItem(e.ctx(), adv2); err != nil {
		t.Fatal(err)
	}
	bt := e.blockedTask("Blocked report", nil)
	blk := e.inboxItemOf(bt.ID)
	exec, lead, dev := e.browser().login("exec"), e.browser().login("lead"), e.browser().login("dev")
	path := "/inbox/" + itoa64(adv.ID) + "/dismiss"

	checkDismissButtons(t, exec, lead, dev, path, adv, adv2, blk)
	before := e.eventCount()
	refusedDismissals(t, e, exec, dev, path, at, adv, adv2, before)
	// The exec dismisses the first item: back to the inbox with a notice, its card is
	// gone, the other item of the same task stays open.
	r := exec.post(path, url.Values{"reason": {"read it, nothing to do"}, "back": {"/inbox"}})
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/inbox" {
		t.Fatalf("dismiss: status %d to %q, want 303 to /inbox: %.300s", r.Status, r.Header.Get("Location"), r.Body)
	}
	r = exec.get("/inbox")
	if !strings.Contains(r.Body, "Task #"+itoa64(at.ID)+": advisory output dismissed") {
		t.Errorf("no notice after dismissing")
	}
	if card(r.Body, adv.ID) != "" || card(r.Body, adv2.ID) == "" || card(r.Body, blk.ID) == "" {
		t.Errorf("after dismissing: dismissed card still shown, or another card gone")
	}
	got := e.item(adv.ID)
	if !got.Resolved || got.ResolvedBy == nil || *got.ResolvedBy != e.agents["exec"].ID || got.ResolvedAt == nil ||
		got.Resolution != "dismissed: read it, nothing to do" {
		t.Errorf("resolved item %+v", got)
	}
	if e.item(adv2.ID).Resolved {
		t.Errorf("the other advisory item of the task was resolved too")
	}
	if n := e.eventCount(); n != before+1 {
		t.Errorf("%d events written, want 1 (inbox.resolved)", n-before)
	}

	before = e.eventCount()
	// Twice: 409, nothing written.
	if r := lead.post(path, url.Values{"back": {"/inbox"}}); r.Status != http.StatusConflict {
		t.Errorf("second dismissal: status %d, want 409", r.Status)
	}
	// A blocked item is not dismissed: 409, it stays open.
	if r := exec.post("/inbox/"+itoa64(blk.ID)+"/dismiss", url.Values{"back": {"/inbox"}}); r.Status != http.StatusConflict {
		t.Errorf("dismissing a blocked item: status %d, want 409", r.Status)
	}
	// An unknown item, or a malformed id: 404.
	for _, id := range []string{"999999", "x"} {
		if r := exec.post("/inbox/"+id+"/dismiss", url.Values{"back": {"/inbox"}}); r.Status != http.StatusNotFound {
			t.Errorf("dismissing item %s: status %d, want 404", id, r.Status)
		}
	}
	if e.eventCount() != before || e.item(blk.ID).Resolved || e.item(adv2.ID).Resolved {
		t.Fatal("a refused dismissal changed something")
	}
	// The lead dismisses the second item on its own route.
	if r := lead.post("/inbox/"+itoa64(adv2.ID)+"/dismiss", url.Values{"back": {"/inbox"}}); r.Status != http.StatusSeeOther {
		t.Errorf("dismissing the second item: status %d", r.Status)
	}
	if it := e.item(adv2.ID); !it.Resolved || it.Resolution != "dismissed" {
		t.Errorf("second item after dismissing: %+v", it)
	}
	// The blocked task's own actions still route to the task actions.
	if r := exec.post("/tasks/"+itoa64(bt.ID)+"/action/cancel", url.Values{"back": {"/inbox"}}); r.Status != http.StatusSeeOther {
		t.Errorf("cancel from the inbox: status %d", r.Status)
	}
}

// checkDismissButtons checks that exec and lead see the button on each advisory item,
// posting to its own route, and not on the blocked one, and a developer sees none.
func checkDismissButtons(t *testing.T, exec, lead, dev *browser, path string, adv models.InboxItem, adv2 *models.InboxItem, blk models.InboxItem) {
	t.Helper()
	// The button is on each advisory item, posting to its own route, not on the
	// blocked one, for exec and lead.
	for name, b := range map[string]*browser{"exec": exec, "lead": lead} {
		r := b.get("/inbox")
		ac, ac2, bc := card(r.Body, adv.ID), card(r.Body, adv2.ID), card(r.Body, blk.ID)
		if ac == "" || ac2 == "" || bc == "" {
			t.Fatalf("%s: inbox misses an item card:\n%s", name, r.Body)
		}
		for _, want := range []string{`data-testid="inbox-form-dismiss"`, `data-testid="inbox-dismiss"`,
			`action="` + path + `"`, `name="csrf"`} {
			if !strings.Contains(ac, want) {
				t.Errorf("%s: advisory card misses %s", name, want)
			}
		}
		if !strings.Contains(ac2, `action="/inbox/`+itoa64(adv2.ID)+`/dismiss"`) {
			t.Errorf("%s: the second advisory card does not post to its own item", name)
		}
		if strings.Contains(r.Body, "/action/dismiss") {
			t.Errorf("%s: a form still posts to the task route", name)
		}
		if strings.Contains(bc, "dismiss") {
			t.Errorf("%s: the blocked card offers dismiss", name)
		}
		if !strings.Contains(bc, `data-testid="inbox-form-retry"`) {
			t.Errorf("%s: the blocked card lost its retry form", name)
		}
	}
	// A developer sees the inbox but no button.
	if r := dev.get("/inbox"); card(r.Body, adv.ID) == "" || strings.Contains(r.Body, "inbox-form-dismiss") {
		t.Errorf("developer: advisory card missing or dismiss offered")
	}
}

// refusedDismissals checks the dismissals refused (no CSRF token, a developer, a note
// too long, the old task route), nothing changed since before.
func refusedDismissals(t *testing.T, e *env, exec, dev *browser, path string, at *models.Task, adv models.InboxItem, adv2 *models.InboxItem, before int) {
	t.Helper()
	// Without the CSRF token, or with a wrong one: 403, nothing changes.
	for _, tok := range []string{"", "wrong-token"} {
		form := url.Values{"reason": {"seen"}, "back": {"/inbox"}}
		if tok != "" {
			form.Set("csrf", tok)
		}
		if r := exec.do("POST", path, form, nil); r.Status != http.StatusForbidden {
			t.Errorf("csrf %q: status %d, want 403", tok, r.Status)
		}
	}
	// A developer with a valid token: 403 by the service's rule.
	if r := dev.post(path, url.Values{"reason": {"seen"}, "back": {"/inbox"}}); r.Status != http.StatusForbidden {
		t.Errorf("developer: status %d, want 403", r.Status)
	}
	// A note that is too long is a field error on this item's dismiss form only, with
	// the note kept.
	long := strings.Repeat("x", 2001)
	r := exec.post(path, url.Values{"reason": {long}, "back": {"/inbox"}})
	if r.Status != http.StatusUnprocessableEntity || !strings.Contains(card(r.Body, adv.ID), `data-testid="inbox-dismiss-reason-error"`) ||
		!strings.Contains(card(r.Body, adv.ID), long) {
		t.Errorf("long note: status %d, want 422 with the field error and the note on the dismiss form", r.Status)
	}
	if strings.Contains(card(r.Body, adv2.ID), "inbox-dismiss-reason-error") {
		t.Errorf("long note: the error is shown on the other item of the task too")
	}
	// The task route that dismissed a task's items is gone.
	if r := exec.post("/tasks/"+itoa64(at.ID)+"/action/dismiss", url.Values{"back": {"/inbox"}}); r.Status != http.StatusNotFound {
		t.Errorf("old task route: status %d, want 404", r.Status)
	}
	if e.eventCount() != before || e.item(adv.ID).Resolved || e.item(adv2.ID).Resolved {
		t.Fatal("a refused dismissal changed something")
	}
}

// item returns inbox item id as stored.
func (e *env) item(id int64) *models.InboxItem {
	e.t.Helper()
	it, err := e.svc.Store().GetInboxItem(e.ctx(), id)
	if err != nil {
		e.t.Fatalf("inbox item %d: %v", id, err)
	}
	return it
}

// TestInboxResolveAPI: POST /api/v1/inbox/{id}/resolve follows the same rules.
func TestInboxResolveAPI(t *testing.T) {
	t.Parallel()
	handlertest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		e := newEnv(t, dialect)
		e.team()
		_, adv := e.advisoryTask("Investigate the slow API")
		bt := e.blockedTask("Blocked report", nil)
		blk := e.inboxItemOf(bt.ID)
		path := "/inbox/" + itoa64(adv.ID) + "/resolve"
		cases := []struct {
			who, path string
			body      any
			status    int
			want      string
		}{
			{"dev", path, map[string]any{"note": "seen"}, 403, `"rule":"lead_or_exec"`},
			{"exec", "/inbox/" + itoa64(blk.ID) + "/resolve", map[string]any{}, 409, "only advisory items"},
			{"exec", "/inbox/999999/resolve", map[string]any{}, 404, "not found"},
			{"exec", path, map[string]any{"notes": "typo"}, 422, `"notes":"unknown field"`},
			{"exec", path, map[string]any{"note": "read it"}, 200, `"resolution":"dismissed: read it"`},
			{"lead", path, map[string]any{}, 409, "already resolved"},
		}
		for _, c := range cases {
			status, raw := e.apiDo(c.who, c.path, c.body)
			if status != c.status || !strings.Contains(raw, c.want) {
				t.Errorf("%s POST %s %v: %d %s, want %d with %s", c.who, c.path, c.body, status, raw, c.status, c.want)
			}
		}
		if it := e.inboxItemOf(bt.ID); it.Resolved {
			t.Error("the blocked item was resolved")
		}
	})
}

// TestBrowserDismissAdvisory: in Chromium, the exec dismisses an advisory output from
// the inbox with a note, through the item's own route, and sees the notice.
func TestBrowserDismissAdvisory(t *testing.T) {
	t.Parallel()
	e := newBrowserEnv(t)
	at, adv := e.advisoryTask("Browser advisory task")
	ctx := chrome(t)
	acceptDialogs(ctx) // Dismiss asks first (data-confirm)
	signIn(t, ctx, e, "exec", "/inbox")
	item := `[data-testid="inbox-item-` + itoa64(adv.ID) + `"] `
	var action chromedp.AttributeResult
	run(t, ctx, "dismiss",
		chromedp.WaitVisible(chromedp.CSS(item+`[data-testid="inbox-dismiss"]`)),
		shot(t, "inbox"),
		read(chromedp.AttributeValue(chromedp.CSS(item+`[data-testid="inbox-form-dismiss"]`), "action"), &action),
		chromedp.SendKeys(chromedp.CSS(item+`[data-testid="inbox-dismiss-reason"]`), "Read it; nothing to change"),
		chromedp.Click(chromedp.CSS(item+`[data-testid="inbox-dismiss"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="flash"]`)),
		shot(t, "after"),
	)
	if want := "/inbox/" + itoa64(adv.ID) + "/dismiss"; action.Value != want {
		t.Errorf("the Dismiss form posts to %q, want %q", action.Value, want)
	}
	if got := text(t, ctx, `[data-testid="flash"]`); !strings.Contains(got, "advisory output dismissed") {
		t.Fatalf("flash %q", got)
	}
	if it := e.inboxItemOf(at.ID); !it.Resolved || it.Resolution != "dismissed: Read it; nothing to change" {
		t.Fatalf("after dismissing: %+v", it)
	}
}
