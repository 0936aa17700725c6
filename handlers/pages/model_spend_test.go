package pages_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// seedMetered gives bot four attempts on one task: yesterday one metered at $0.75
// whose worker reported $0.01 (flagged) and one its worker alone reported at $99;
// today one metered at $0.25; ten days ago one metered at $5. It returns yesterday's
// and today's dates and ten days ago's.
func seedMetered(t *testing.T, e *env) (yesterday, today, older string) {
	t.Helper()
	ctx := e.ctx()
	bot, lead := e.agents["bot"], e.agents["lead"]
	tk := &models.Task{Title: "metered work", Role: "developer", CreatorID: lead.ID}
	if err := e.db.CreateTask(ctx, tk); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	y := models.DayOf(now).AddDate(0, 0, -1)
	o := models.DayOf(now).AddDate(0, 0, -10)
	metered := func(cost float64, tokens int64) *models.Usage {
		return &models.Usage{InputTokens: &tokens, CostUSD: &cost, Model: "claude-sonnet-4-5"}
	}
	for i, a := range []struct {
		at    time.Time
		usage *models.Usage
	}{
		{y.Add(9 * time.Hour), models.ReconcileUsage(metered(0.75, 30000), &models.Usage{CostUSD: f64p(0.01), InputTokens: i64p(400)})},
		{y.Add(10 * time.Hour), &models.Usage{CostUSD: f64p(99), InputTokens: i64p(1), CostSource: models.CostReported}},
		{now.Add(-time.Minute), models.ReconcileUsage(metered(0.25, 10000), nil)},
		{o.Add(12 * time.Hour), models.ReconcileUsage(metered(5, 5), nil)},
	} {
		end := a.at.Add(30 * time.Second)
		if err := e.db.CreateAttempt(ctx, &models.Attempt{TaskID: tk.ID, Number: i + 1, AgentID: bot.ID, Outcome: models.OutcomeFailed,
			Stage: models.StageVerify, StartedAt: a.at, FinishedAt: &end, Usage: a.usage}); err != nil {
			t.Fatal(err)
		}
	}
	return y.Format(time.DateOnly), models.DayOf(now).Format(time.DateOnly), o.Format(time.DateOnly)
}

// textOf is the text of the element with data-testid testid (its first text node).
func textOf(body, testid string) string {
	m := regexp.MustCompile(`data-testid="` + regexp.QuoteMeta(testid) + `"[^>]*>\s*([^<]*?)\s*<`).FindStringSubmatch(body)
	if m == nil {
		return "<missing>"
	}
	return m[1]
}

// TestModelSpendAndUsageMismatchPages: the agents page lists what the model gateway
// metered per agent per day in its window (7 or 30 days), never a worker's own
// report, with the flagged attempts noted; a live re-fetch counts nothing again. Bot's
// scorecard counts its attempt flagged for a usage mismatch and lists its own metered
// spend per day.
func TestModelSpendAndUsageMismatchPages(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, dialect)
			e.team()
			yesterday, today, older := seedMetered(t, e)
			b := e.browser().login("dev")

			agents := b.get("/agents")
			if agents.Status != 200 {
				t.Fatalf("/agents: %d", agents.Status)
			}
			for testid, want := range map[string]string{
				"model-spend-" + yesterday + "-bot-cost": "$0.75",
				"model-spend-" + today + "-bot-cost":     "$0.25",
			} {
				if got := textOf(agents.Body, testid); got != want {
					t.Errorf("%s = %q, want %q", testid, got, want)
				}
			}
			if !strings.Contains(agents.Body, "$1.00 · 40,000 tokens") || !strings.Contains(agents.Body, "1 flagged: usage mismatch") {
				t.Error("the 7-day model spend lacks its total or the flagged attempt")
			}
			if strings.Contains(agents.Body, "$99") || strings.Contains(agents.Body, "model-spend-"+older) {
				t.Error("the 7-day model spend counts a worker's own report or an attempt before the window")
			}
			month := b.get("/agents?days=30")
			if textOf(month.Body, "model-spend-"+older+"-bot-cost") != "$5.00" || !strings.Contains(month.Body, "$6.00 · 40,005 tokens") {
				t.Error("the 30-day model spend lacks the attempt of ten days ago")
			}
			if r := b.do("GET", "/agents", nil, map[string]string{"X-Partial": "1"}); strings.Contains(r.Body, `data-testid="model-spend"`) {
				t.Error("a live re-fetch counted the model spend again")
			}

			sc := b.get("/agents/" + itoa64(e.agents["bot"].ID) + "/scorecard")
			if sc.Status != 200 || !strings.Contains(sc.Body, `data-testid="scorecard-usage-mismatches" data-count="1"`) || !strings.Contains(sc.Body, "1 flagged") {
				t.Fatalf("the scorecard does not count the flagged attempt: %d", sc.Status)
			}
			if textOf(sc.Body, "scorecard-model-spend-"+yesterday+"-bot-cost") != "$0.75" {
				t.Error("the scorecard lacks bot's metered spend yesterday")
			}
			lead := b.get("/agents/" + itoa64(e.agents["lead"].ID) + "/scorecard")
			if !strings.Contains(lead.Body, `data-testid="scorecard-usage-mismatches" data-count="0"`) ||
				!strings.Contains(lead.Body, "No model call went through the gateway") {
				t.Error("lead's scorecard shows bot's flags or spend")
			}
		})
	}
}
