package pages_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
)

// TestEveryPostNeedsCSRF sends every state-changing dashboard route of the server
// (enumerated from echo, so new routes are covered) without a CSRF token, with a
// valid session: each is refused with 403 and nothing changes. A wrong token fails
// the same way.
func TestEveryPostNeedsCSRF(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	e.team()
	g := e.pendingGoal("csrf goal")
	bt := e.blockedTask("csrf blocked", nil)
	b := e.browser().login("lead")
	param := regexp.MustCompile(`:[a-z_]+|\*`)
	values := map[string]string{":id": itoa64(bt.ID), ":action": "cancel", ":name": "demo", "*": "x"}
	n := 0
	for _, r := range e.echo.Routes() {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		default:
			continue
		}
		if strings.HasPrefix(r.Path, "/api/") || strings.HasPrefix(r.Path, "/mcp") {
			continue // bearer tokens, not cookies: no CSRF exposure
		}
		path := param.ReplaceAllStringFunc(r.Path, func(s string) string { return values[s] })
		if strings.HasPrefix(r.Path, "/goals/:id") {
			path = strings.Replace(r.Path, ":id", itoa64(g.ID), 1)
		}
		for _, tok := range []string{"", "wrong-token"} {
			before := e.eventCount()
			form := url.Values{"reason": {"r"}, "notes": {"n"}, "title": {"t"}, "name": {"lead"}, "password": {testPassword}}
			if tok != "" {
				form.Set("csrf", tok)
			}
			res := b.do(r.Method, path, form, nil)
			if res.Status != http.StatusForbidden {
				t.Errorf("%s %s with csrf %q: %d, want 403", r.Method, r.Path, tok, res.Status)
			}
			if after := e.eventCount(); after != before {
				t.Errorf("%s %s without csrf changed %d events", r.Method, r.Path, after-before)
			}
		}
		n++
	}
	if n < 7 {
		t.Fatalf("only %d state-changing routes found", n)
	}
	if e.state(bt.ID) != models.TaskBlocked || e.goalState(g.ID) != models.GoalPendingVerify {
		t.Fatal("state changed")
	}
	// The header works instead of the field.
	r := b.do("POST", "/tasks/"+itoa64(bt.ID)+"/action/cancel", url.Values{}, map[string]string{"X-CSRF-Token": b.csrf})
	if r.Status != http.StatusSeeOther {
		t.Fatalf("with header: %d", r.Status)
	}
}

// TestFormErrors422 re-renders forms with their field errors and 422.
func TestFormErrors422(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	e.team()
	g := e.pendingGoal("form goal")
	bt := e.blockedTask("form blocked", nil)
	rv := e.humanTask("form review", nil, models.TaskReview)
	lead, exec, reviewer := e.browser().login("lead"), e.browser().login("exec"), e.browser().login("reviewer")
	cases := []struct {
		b      *browser
		path   string
		form   url.Values
		testid string
	}{
		{lead, "/goals/" + itoa64(g.ID) + "/reject", url.Values{"reason": {""}, "fix_title": {"Fix it"}}, "goal-reject-reason-error"},
		{lead, "/goals/" + itoa64(g.ID) + "/reject", url.Values{"reason": {"broken"}}, "fix_tasks-error"},
		{lead, "/goals/" + itoa64(g.ID) + "/reject", url.Values{"reason": {"broken"}, "fix_title": {""}, "fix_role": {"Bad Role!"}}, "fix-0-title-error"},
		{lead, "/goals/" + itoa64(g.ID) + "/verify", url.Values{"notes": {" "}}, "goal-verify-notes-error"},
		{lead, "/goals", url.Values{"title": {""}}, "goal-title-error"},
		{exec, "/tasks/" + itoa64(bt.ID) + "/action/retry", url.Values{"reason": {""}, "back": {"/inbox"}}, "inbox-retry-reason-error"},
		{exec, "/tasks/" + itoa64(bt.ID) + "/action/accept", url.Values{"reason": {""}}, "act-accept-reason-error"},
		{reviewer, "/tasks/" + itoa64(rv.ID) + "/action/reject", url.Values{"reason": {""}}, "act-reject-reason-error"},
		{exec, "/tasks/" + itoa64(bt.ID) + "/action/reassign", url.Values{"agent": {"nobody"}}, "act-reassign-agent-error"},
	}
	for _, c := range cases {
		before := e.eventCount()
		r := c.b.post(c.path, c.form)
		if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, `data-testid="`+c.testid+`"`) {
			t.Errorf("POST %s %v: %d, want 422 with %s", c.path, c.form, r.Status, c.testid)
		}
		if e.eventCount() != before {
			t.Errorf("POST %s: a refused form changed events", c.path)
		}
	}
	// The typed input is kept.
	r := lead.post("/goals/"+itoa64(g.ID)+"/reject", url.Values{"reason": {""}, "fix_title": {"Keep <me>"}})
	if !strings.Contains(r.Body, `value="Keep &lt;me&gt;"`) {
		t.Errorf("fix title not kept")
	}
}

// TestButtonsFollowRoles: a lead sees verify and reject on a goal waiting for
// verification, a developer does not; the exec sees accept on a blocked task.
func TestButtonsFollowRoles(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	e.team()
	g := e.pendingGoal("buttons goal")
	bt := e.blockedTask("buttons blocked", nil)
	dev, exec := e.browser().login("dev"), e.browser().login("exec")
	if r := dev.get("/goals/" + itoa64(g.ID)); strings.Contains(r.Body, "goal-verify-form") {
		t.Error("developer sees the verify form")
	}
	r := exec.get("/tasks/" + itoa64(bt.ID))
	for _, id := range []string{"action-retry", "action-reassign", "action-accept", "action-cancel"} {
		if !strings.Contains(r.Body, `data-testid="`+id+`"`) {
			t.Errorf("exec misses %s", id)
		}
	}
	if r := dev.get("/tasks/" + itoa64(bt.ID)); strings.Contains(r.Body, `data-testid="action-accept"`) {
		t.Error("developer sees accept")
	}
}
