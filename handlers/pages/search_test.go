package pages_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
)

// TestSearchPage: /search?q= finds tasks by title and brief, goals by title, agents
// by name and role, and the task and goal a number names ("#N" the number alone);
// a query under three characters says it searched numbers and agents only; an
// agent's command (admins only) is never searched; the nav carries the search box
// with the query.
func TestSearchPage(t *testing.T) {
	t.Parallel()
	handlertest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		e := newEnv(t, dialect)
		e.team()
		bot := e.agents["bot"]
		bot.Command = "run-secret-wrapper"
		if err := e.svc.Store().UpdateAgent(e.ctx(), bot); err != nil {
			t.Fatal(err)
		}
		g := &models.Goal{Title: "Checkout revamp"}
		if err := e.svc.Goals.CreateGoal(e.ctx(), models.System, g); err != nil {
			t.Fatal(err)
		}
		byTitle := e.humanTask("Fix the checkout button", &g.ID, models.TaskPending)
		byBrief := e.humanTask("Unrelated title", nil, models.TaskPending) // brief: "Brief of Unrelated title"
		other := e.humanTask("Something else", nil, models.TaskPending)
		b := e.browser().login("lead")
		get := func(q string) string {
			t.Helper()
			r := b.get("/search?q=" + url.QueryEscape(q))
			if r.Status != 200 {
				t.Fatalf("GET /search?q=%s: %d\n%s", q, r.Status, r.Body)
			}
			return r.Body
		}
		has := func(body, testid string, want bool) {
			t.Helper()
			if got := strings.Contains(body, `data-testid="`+testid+`"`); got != want {
				t.Errorf("%s on the page: %v, want %v", testid, got, want)
			}
		}
		body := get("CHECKOUT")
		has(body, "search-tasks-"+itoa64(byTitle.ID), true)
		has(body, "search-tasks-"+itoa64(other.ID), false)
		has(body, "search-goals-"+itoa64(g.ID), true)
		if !strings.Contains(body, `value="CHECKOUT"`) {
			t.Error("the search box does not keep the query")
		}
		has(get("brief of unrelated"), "search-tasks-"+itoa64(byBrief.ID), true)

		body = get("#" + itoa64(other.ID))
		has(body, "search-tasks-"+itoa64(other.ID), true)
		has(body, "search-tasks-"+itoa64(byTitle.ID), false)
		has(get(itoa64(other.ID)), "search-tasks-"+itoa64(other.ID), true)

		body = get("tester")
		has(body, "search-agents-"+itoa64(e.agents["tester"].ID), true)
		has(get("secret-wrapper"), "search-agents-"+itoa64(bot.ID), false)

		body = get("xy")
		has(body, "search-short", true)
		if !strings.Contains(body, "Nothing matches") {
			t.Error("an empty result says nothing")
		}
		has(b.get("/tasks").Body, "nav-search", true)
	})
}
