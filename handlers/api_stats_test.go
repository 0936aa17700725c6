package handlers_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// TestAgentStatsAPI: GET /agents/{id}/stats answers the scorecard of a seeded
// history (one task verified at the first pass, one blocked at verify: rates of one
// half), one daily bar per day of the window (7 by default, 30 asked), by id or name;
// a days other than 7 or 30 is 422 naming the field and the allowed values.
func TestAgentStatsAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		ctx := context.Background()
		e.agent("lead", models.KindHuman, "lead")
		w := e.agent("w", models.KindHuman, "developer")
		now := time.Now().UTC().Add(-time.Minute)
		var blocked int64
		for i, verified := range []bool{true, false} {
			tk := &models.Task{Title: "t", Role: "developer", CreatorID: w.ID, State: models.TaskBlocked}
			if err := e.db.CreateTask(ctx, tk); err != nil {
				t.Fatal(err)
			}
			a := &models.Attempt{TaskID: tk.ID, Number: 1, AgentID: w.ID, Outcome: models.OutcomeFailed, Stage: models.StageVerify,
				StartedAt: now.Add(-time.Duration(i+1) * time.Minute), FinishedAt: &now}
			if verified {
				tk.State, tk.VerifiedAt, a.Outcome, a.Stage = models.TaskVerified, &now, models.OutcomePassed, ""
				if err := e.db.UpdateTask(ctx, tk); err != nil {
					t.Fatal(err)
				}
			} else {
				blocked = tk.ID
				p, _ := json.Marshal(models.BlockedPayload{TaskID: tk.ID, Agent: "w", Attempts: []models.BlockedAttempt{{Attempt: 1, Stage: models.StageVerify}}})
				if err := e.db.CreateInboxItem(ctx, &models.InboxItem{Kind: models.InboxBlocked, TaskID: tk.ID, Payload: p, CreatedAt: now}); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.db.CreateAttempt(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		r := e.must(200, "lead", "GET", "/agents/"+itoa(w.ID)+"/stats", nil)
		sc := r.Body["scorecard"].(map[string]any)
		if sc["taken"] != 2.0 || sc["first_pass_rate"] != 0.5 || sc["block_rate"] != 0.5 || sc["work_block_rate"] != 0.5 ||
			sc["infra_block_rate"] != 0.0 || sc["days"] != 7.0 || sc["median_ms"] == nil {
			t.Fatalf("scorecard: %v", sc)
		}
		if n := len(r.Body["daily"].([]any)); n != 7 {
			t.Fatalf("%d daily bars for 7 days", n)
		}
		if r.Body["agent"].(map[string]any)["name"] != "w" || len(r.Body["durations"].([]any)) == 0 {
			t.Fatalf("agent or histogram missing: %v", r.Body)
		}
		r = e.must(200, "w", "GET", "/agents/w/stats?days=30", nil)
		if n := len(r.Body["daily"].([]any)); n != 30 {
			t.Fatalf("%d daily bars for 30 days", n)
		}
		for _, bad := range []string{"14", "abc", "0"} {
			r := e.must(422, "lead", "GET", "/agents/"+itoa(w.ID)+"/stats?days="+bad, nil)
			if msg, _ := r.fields()["days"].(string); !strings.Contains(msg, "7 or 30") {
				t.Fatalf("days=%s: %s", bad, r.Raw)
			}
		}
		// A worker's attempt token is for its task, not for reading scorecards.
		secret, _, err := e.svc.Tokens.IssueAttemptToken(ctx, w.ID, blocked, 2, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		e.tokens["attempt"] = secret
		if r := e.must(403, "attempt", "GET", "/agents/"+itoa(w.ID)+"/stats", nil); r.errRule() != "attempt_token_scope" {
			t.Fatalf("an attempt token's stats: %s", r.Raw)
		}
		e.must(404, "lead", "GET", "/agents/999999/stats", nil)
		e.must(404, "lead", "GET", "/agents/nobody/stats", nil)
	})
}
