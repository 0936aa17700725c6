package handlers_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
)

// TestStatsRefusesAttemptTokenFirst (S4): an attempt token asking for a scorecard by
// an agent's name is 403 attempt_token_scope whether the name exists or not, so it
// cannot probe which agents exist by a 404; a person's token still gets the 404.
// Through the API the bearer middleware's route list refuses it first; the handler's
// own check, which the second part calls directly as a scoped actor, holds should the
// route ever be opened to attempt tokens.
func TestStatsRefusesAttemptTokenFirst(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("lee", models.KindHuman, models.RoleLead)
		bot := e.agent("bot", models.KindWorker, "developer")
		ctx := context.Background()
		runner, err := e.svc.Agents.RunnerAgent(ctx)
		if err != nil {
			t.Fatal(err)
		}
		own := e.must(201, "lee", "POST", "/tasks", map[string]any{"title": "own", "assignee": "bot"}).num("id")
		if _, err := e.svc.Tasks.TaskAction(ctx, runner, own, models.ActStart, models.ActionInput{}); err != nil {
			t.Fatal(err)
		}
		secret, _, err := e.svc.Tokens.IssueAttemptToken(ctx, bot.ID, own, 1, 30*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		e.tokens["attempt"] = secret
		for _, name := range []string{"lee", "nobody", "bot"} {
			if r := e.do("attempt", "GET", "/agents/"+name+"/stats", nil); r.Status != 403 || r.errRule() != models.RuleAttemptTokenScope {
				t.Fatalf("an attempt token's stats of %q: %d %s", name, r.Status, r.Raw)
			}
		}
		e.must(404, "lee", "GET", "/agents/nobody/stats", nil)

		scoped := *bot
		scoped.Scope = &models.TokenScope{TaskID: own, Attempt: 1}
		c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/api/v1/agents/nobody/stats", nil), httptest.NewRecorder())
		c.SetParamNames("name")
		c.SetParamValues("nobody")
		handlers.SetActor(c, &scoped)
		if err := handlers.NewAgentsAPI(e.svc.Store(), e.svc.Agents, e.svc.Tokens, e.svc.Stats, e.svc.Now).Stats(c); models.ErrorCode(err) != models.EFORBIDDEN {
			t.Fatalf("the stats handler as a scoped actor asking for an unknown name: %v, want %s attempt_token_scope", err, models.EFORBIDDEN)
		} else if me, _ := err.(*models.Error); me == nil || me.Rule != models.RuleAttemptTokenScope {
			t.Fatalf("the stats handler's refusal: %#v", err)
		}
	})
}
