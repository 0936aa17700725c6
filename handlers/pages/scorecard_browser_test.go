package pages_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/models"
)

// noScript switches the tab's scripts off: what it shows next is the server's HTML.
func noScript() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return err
	})
}

// chartBars reads the chart testid as Chromium serialises it and returns its bars'
// keys, parsing it with encoding/xml (barsOf).
func chartBars(t *testing.T, ctx context.Context, testid string) []string {
	t.Helper()
	svg, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS(`[data-testid="`+testid+`"]`)))
	if err != nil {
		t.Fatalf("read chart %s: %v", testid, err)
	}
	return barsOf(t, svg)
}

// TestBrowserScorecards: in headless Chromium, with JavaScript and then without, the
// agents page shows the ranking, bot's scorecard page its figures and two charts
// (7 daily bars, 9 histogram bins; 30 bars after the 30-day switch), and the goal
// page its burn-down and failing stage; screenshots of each land in the artifacts.
func TestBrowserScorecards(t *testing.T) {
	t.Parallel()
	e := newBrowserEnv(t)
	seeded := models.DayOf(time.Now())
	h := seedScores(t, e)

	for _, mode := range []struct {
		name string
		js   bool
	}{{"with-js", true}, {"no-js", false}} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := chrome(t)
			if !mode.js {
				run(t, ctx, "switch scripts off", noScript())
			}
			signIn(t, ctx, e, "lead", "/agents")
			run(t, ctx, "agents ranking",
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="agents-ranking"]`)),
				shot(t, "agents-ranking"))
			if got := text(t, ctx, `[data-testid="rank-bot-first-pass"]`); got != "25 %" {
				t.Fatalf("bot's first-pass rate on the agents page: %q", got)
			}

			run(t, ctx, "open bot's scorecard from the ranking",
				chromedp.Click(chromedp.CSS(`[data-testid="rank-bot"] a`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="chart-daily"]`)),
				shot(t, "scorecard-7"))
			if got := text(t, ctx, `[data-testid="page-title"]`); got != "Scorecard of bot" {
				t.Fatalf("page title %q", got)
			}
			if n := len(chartBars(t, ctx, "chart-daily")); n != 7 {
				t.Fatalf("%d daily bars, want 7", n)
			}
			if n := len(chartBars(t, ctx, "chart-durations")); n != 9 {
				t.Fatalf("%d histogram bars, want 9", n)
			}
			run(t, ctx, "switch to 30 days",
				chromedp.Click(chromedp.CSS(`[data-testid="scorecard-days-30"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="scorecard-days"] [aria-current="page"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="chart-daily"][data-bars="30"]`)),
				shot(t, "scorecard-30"))
			if n := len(chartBars(t, ctx, "chart-daily")); n != 30 {
				t.Fatalf("%d daily bars after the switch, want 30", n)
			}

			run(t, ctx, "goal burn-down",
				chromedp.Navigate(e.srv.URL+"/goals/"+itoa64(h.goal)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="chart-burndown"]`)),
				shot(t, "goal-burndown"))
			// A bar a day from the goal's creation, two days before the seeding, to today:
			// one more for each midnight the test has crossed since.
			want := 3 + int(models.DayOf(time.Now()).Sub(seeded)/(24*time.Hour))
			if n := len(chartBars(t, ctx, "chart-burndown")); n != want {
				t.Fatalf("%d burn-down bars, want %d", n, want)
			}
			if got := text(t, ctx, `[data-testid="goal-top-stage"] strong`); got != "verify" {
				t.Fatalf("failing stage %q, want verify", got)
			}
		})
	}
}
