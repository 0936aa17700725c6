package pages_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// TestCanaryForm: on a worker's scorecard a lead sees the honesty section with the
// canary form; bad input is 422 with each field's error and the form as typed; a good
// one schedules the canary task, listed with its result; anyone else sees the figures
// but neither the form nor the list, and a non-lead's post is refused. A passed
// canary attempt flags the agent on its scorecard and in the agents page's honesty
// ranking, by agent and by model.
func TestCanaryForm(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, dialect)
			e.team()
			bot := e.agents["bot"]
			lead := e.browser().login("lead")
			path := "/agents/" + itoa64(bot.ID) + "/scorecard"
			sc := lead.get(path)
			for _, want := range []string{`data-testid="scorecard-honesty"`, `data-testid="canary-form"`, `data-testid="honesty-agent"`} {
				if !strings.Contains(sc.Body, want) {
					t.Fatalf("the lead's scorecard lacks %s", want)
				}
			}
			dev := e.browser().login("dev")
			if r := dev.get(path); !strings.Contains(r.Body, `data-testid="scorecard-honesty"`) || strings.Contains(r.Body, `data-testid="canary-form"`) {
				t.Fatal("a developer sees the canary form, or no honesty section")
			}
			if r := dev.post(path[:len(path)-len("scorecard")]+"canaries", url.Values{"kind": {"go"}}); r.Status != 403 {
				t.Fatalf("a developer's post: %d", r.Status)
			}

			before := e.eventCount()
			r := lead.post("/agents/"+itoa64(bot.ID)+"/canaries", url.Values{"kind": {"team"}, "title": {"Sort it"},
				"held_out_path": {"../escape_test.go"}, "held_out_content": {"package x"}})
			if r.Status != 422 {
				t.Fatalf("bad team canary: %d", r.Status)
			}
			for _, id := range []string{"canary-brief-error", "canary-verify-error"} {
				if !strings.Contains(r.Body, `data-testid="`+id+`"`) {
					t.Fatalf("the 422 page lacks %s", id)
				}
			}
			if !strings.Contains(r.Body, `value="Sort it"`) || !strings.Contains(r.Body, `data-testid="canary-form"`) {
				t.Fatal("the 422 page lost the form as typed")
			}
			r = lead.post("/agents/"+itoa64(bot.ID)+"/canaries", url.Values{"kind": {"team"}, "title": {"Sort it"}, "brief": {"Sort."},
				"verify": {"true"}, "held_out_path": {"../escape_test.go"}, "held_out_content": {"package x"}})
			if r.Status != 422 || !strings.Contains(r.Body, `data-testid="canary-held-out-path-error"`) {
				t.Fatalf("a held-out path outside the workspace: %d", r.Status)
			}
			if r := lead.post("/agents/"+itoa64(bot.ID)+"/canaries", url.Values{"kind": {"fortran"}}); r.Status != 422 ||
				!strings.Contains(r.Body, `data-testid="canary-kind-error"`) {
				t.Fatalf("an unknown kind: %d", r.Status)
			}
			if e.eventCount() != before {
				t.Fatal("a refused canary changed something")
			}

			r = lead.post("/agents/"+itoa64(bot.ID)+"/canaries", url.Values{"kind": {"node"}, "role": {"developer"}})
			if r.Status != 303 {
				t.Fatalf("schedule: %d %s", r.Status, r.Body)
			}
			runs, err := e.svc.Stats.CanaryRuns(e.ctx(), e.agents["lead"], bot.ID)
			if err != nil || len(runs) != 1 || runs[0].Kind != models.CanaryNode {
				t.Fatalf("canary runs %+v, %v", runs, err)
			}
			now := time.Now().UTC().Add(-time.Minute)
			if err := e.db.CreateAttempt(e.ctx(), &models.Attempt{TaskID: runs[0].TaskID, Number: 1, AgentID: bot.ID,
				Outcome: models.OutcomePassed, StartedAt: now, FinishedAt: &now, Usage: &models.Usage{Model: "model-x", Turns: ptrInt(1)}}); err != nil {
				t.Fatal(err)
			}
			sc = lead.get(path)
			for _, want := range []string{`data-testid="canary-task-` + itoa64(runs[0].TaskID) + `" data-result="cheat"`,
				`data-testid="honesty-agent-flagged"`, `data-testid="honesty-model-model-x" data-cheats="1"`} {
				if !strings.Contains(sc.Body, want) {
					t.Fatalf("the scorecard lacks %s", want)
				}
			}
			if a := dev.get("/agents"); !strings.Contains(a.Body, `data-testid="honesty-rank-bot" data-cheats="1"`) ||
				!strings.Contains(a.Body, `data-testid="honesty-rank-model-model-x" data-cheats="1"`) {
				t.Fatal("the agents page's honesty ranking lacks bot's cheat, by agent or by model")
			}
		})
	}
}
