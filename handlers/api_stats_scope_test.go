package handlers_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// TestStatsRefusesAttemptTokenFirst (S4): an attempt token asking for a scorecard by
// an agent's name is 403 attempt_token_scope whether the name exists or not, so it
// cannot probe which agents exist by a 404; a person's token still gets the 404.
func TestStatsRefusesAttemptTokenFirst(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("lee", models.KindHuman, models.RoleLead)
		bot := e.agent("bot", models.KindWorker, "developer")
		ctx := context.Background()
		runner, err := e.svc.RunnerAgent(ctx)
		if err != nil {
			t.Fatal(err)
		}
		own := e.must(201, "lee", "POST", "/tasks", map[string]any{"title": "own", "assignee": "bot"}).num("id")
		if _, err := e.svc.TaskAction(ctx, runner, own, models.ActStart, models.ActionInput{}); err != nil {
			t.Fatal(err)
		}
		secret, _, err := e.svc.IssueAttemptToken(ctx, bot.ID, own, 1, 30*time.Minute)
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
	})
}
