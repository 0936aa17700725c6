package pages_test

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// scoreHistory is what seedScores made: the worker bot's history and a goal.
type scoreHistory struct {
	bot  *models.Agent
	goal int64
}

// seedScores gives the worker bot (e.team) four tasks of one goal, all attempted
// yesterday (UTC): one verified at the first pass, one verified after a failed
// attempt at verify, one blocked at verify after two failures, one blocked at
// infrastructure; a fifth task waits. Over 7 days bot took 4 tasks: first pass
// 25 %, revised 50 %, blocked 50 % (one work, one infrastructure). The goal was made
// the day before yesterday: its burn-down has three days, 5, 3 and 3 tasks left, and
// its attempts fail most at verify (3).
func seedScores(t *testing.T, e *env) scoreHistory {
	t.Helper()
	ctx := e.ctx()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	bot := e.agents["bot"]
	lead := e.agents["lead"]
	yesterday := models.DayOf(time.Now()).AddDate(0, 0, -1)
	at := func(h, m int) time.Time {
		return yesterday.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
	}
	g := &models.Goal{Title: "Scored goal", CreatorID: lead.ID, CreatedAt: yesterday.AddDate(0, 0, -1).Add(time.Hour)}
	must(e.db.CreateGoal(ctx, g))
	mk := func(state models.TaskState, verified *time.Time, outcomes ...string) *models.Task {
		tk := &models.Task{Title: "scored " + string(state), Role: "developer", CreatorID: lead.ID, GoalID: &g.ID, CreatedAt: g.CreatedAt.Add(time.Minute)}
		must(e.db.CreateTask(ctx, tk))
		tk.State, tk.VerifiedAt, tk.AssigneeID, tk.BuilderID = state, verified, &bot.ID, &bot.ID
		must(e.db.UpdateTask(ctx, tk))
		for i, o := range outcomes {
			start := at(1+int(tk.ID%10), 10*i)
			end := start.Add(time.Duration(5*(i+1)) * time.Minute)
			a := &models.Attempt{TaskID: tk.ID, Number: i + 1, AgentID: bot.ID, Outcome: o, StartedAt: start, FinishedAt: &end}
			if o == models.OutcomeFailed {
				a.Stage = models.StageVerify
			} else if o == models.OutcomeInfra {
				a.Stage = models.StageInfra
			}
			must(e.db.CreateAttempt(ctx, a))
		}
		return tk
	}
	block := func(tk *models.Task, stage string) {
		p, _ := json.Marshal(models.BlockedPayload{Type: models.LedgerTaskBlocked, TaskID: tk.ID, Agent: bot.Name,
			Attempts: []models.BlockedAttempt{{Attempt: 2, Stage: stage, Failure: "ran out"}}})
		must(e.db.CreateInboxItem(ctx, &models.InboxItem{Kind: models.InboxBlocked, TaskID: tk.ID, GoalID: &g.ID, Title: "blocked", Payload: p, CreatedAt: at(20, 0)}))
	}
	v := at(18, 0)
	pass, fail, infra := models.OutcomePassed, models.OutcomeFailed, models.OutcomeInfra
	mk(models.TaskVerified, &v, pass)
	mk(models.TaskVerified, &v, fail, pass)
	block(mk(models.TaskBlocked, nil, fail, fail), models.StageVerify)
	block(mk(models.TaskBlocked, nil, infra, infra), models.StageInfra)
	mk(models.TaskPending, nil)
	return scoreHistory{bot: bot, goal: g.ID}
}

// svgOf cuts the inline SVG with data-testid testid out of html.
func svgOf(t *testing.T, html, testid string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<svg[^>]*data-testid="` + regexp.QuoteMeta(testid) + `".*?</svg>`).FindString(html)
	if m == "" {
		t.Fatalf("no SVG %s in the page", testid)
	}
	return m
}

// barsOf parses svg with encoding/xml (strict: it must be well-formed) and returns
// the keys of its bars (<g class="bar">), in order.
func barsOf(t *testing.T, svg string) []string {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	d.Strict = true
	var keys []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the chart is not well-formed XML: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "g" {
			var class, key string
			for _, a := range se.Attr {
				switch a.Name.Local {
				case "class":
					class = a.Value
				case "data-key":
					key = a.Value
				}
			}
			if class == "bar" {
				keys = append(keys, key)
			}
		}
	}
	return keys
}

// TestScorecardPages: the agents page ranks bot with its first-pass rate; bot's
// scorecard page states the seeded figures and draws one bar per day of the window
// (7 and 30) and one per duration bin, each chart valid XML; the goal page draws its
// burn-down (one bar per day since the goal was made) and names verify as the stage
// failing most; a days of 9 is 422.
func TestScorecardPages(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, dialect)
			e.team()
			seeded := models.DayOf(time.Now())
			h := seedScores(t, e)
			b := e.browser().login("dev")

			agents := b.get("/agents")
			if agents.Status != 200 || !strings.Contains(agents.Body, `data-testid="rank-bot" data-first-pass="0.25" data-taken="4"`) {
				t.Fatalf("the ranking lacks bot's row: %d %s", agents.Status, agents.Body)
			}
			if i, j := strings.Index(agents.Body, `data-testid="rank-bot"`), strings.Index(agents.Body, `data-testid="rank-lead"`); i < 0 || j < 0 || i > j {
				t.Fatal("bot, who took tasks, does not rank above lead, who took none")
			}
			if !strings.Contains(agents.Body, `data-testid="rank-role-developer"`) {
				t.Fatal("no ranking of the developer role")
			}
			if r := b.do("GET", "/agents", nil, map[string]string{"X-Partial": "1"}); r.Status != 200 || strings.Contains(r.Body, `data-testid="rank-bot"`) {
				t.Fatalf("a live re-fetch counted the ranking again: %d", r.Status)
			}
			if r := b.get("/agents?days=9"); r.Status != 422 || !strings.Contains(r.Body, "7 or 30") {
				t.Fatalf("days=9: %d", r.Status)
			}

			if r := b.get("/agents/" + itoa64(h.bot.ID)); !strings.Contains(r.Body, `href="/agents/`+itoa64(h.bot.ID)+`/scorecard"`) {
				t.Fatal("the agent's page does not link its scorecard")
			}
			path := "/agents/" + itoa64(h.bot.ID) + "/scorecard"
			sc := b.get(path)
			if sc.Status != 200 {
				t.Fatalf("scorecard: %d %s", sc.Status, sc.Body)
			}
			for _, want := range []string{"25 %", "50 %", "1 work, 1 infrastructure, 0 other", "4 (7 attempts)"} {
				if !strings.Contains(sc.Body, want) {
					t.Fatalf("the scorecard lacks %q", want)
				}
			}
			daily := barsOf(t, svgOf(t, sc.Body, "chart-daily"))
			if len(daily) != 7 || daily[6] != models.DayOf(time.Now()).Format(time.DateOnly) {
				t.Fatalf("daily bars %v: want 7 ending today", daily)
			}
			if n := len(barsOf(t, svgOf(t, sc.Body, "chart-durations"))); n != 9 {
				t.Fatalf("%d histogram bars, want 9", n)
			}
			if n := len(barsOf(t, svgOf(t, b.get(path+"?days=30").Body, "chart-daily"))); n != 30 {
				t.Fatalf("%d daily bars for 30 days", n)
			}
			if r := b.get(path + "?days=365"); r.Status != 422 {
				t.Fatalf("days=365: %d", r.Status)
			}

			gp := b.get("/goals/" + itoa64(h.goal))
			burn := svgOf(t, gp.Body, "chart-burndown")
			// The goal is two days old: one more bar for each midnight crossed since seeding.
			if n, want := len(barsOf(t, burn)), 3+int(models.DayOf(time.Now()).Sub(seeded)/(24*time.Hour)); n != want {
				t.Fatalf("%d burn-down bars, want %d", n, want)
			}
			for _, left := range []string{`data-value="5"`, `data-value="3"`} {
				if !strings.Contains(burn, left) {
					t.Fatalf("the burn-down lacks %s: %s", left, burn)
				}
			}
			if !strings.Contains(gp.Body, `data-testid="goal-top-stage" data-stage="verify"`) ||
				!strings.Contains(gp.Body, `data-testid="goal-stage-verify" data-count="3"`) {
				t.Fatal("the goal page does not name verify, with 3 failures, as the failing stage")
			}
		})
	}
}
