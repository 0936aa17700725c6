package pages

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
	agentpage "github.com/countersign/countersign/web/pages/agent"
	agentspage "github.com/countersign/countersign/web/pages/agents"
)

// agentScorecard answers GET /agents/:id/scorecard?days=7|30: the agent's figures,
// split by task role, with its daily bars and duration histogram (422 for another
// days).
func (p *Pages) agentScorecard(c echo.Context) error {
	id, err := handlers.PathID(c, "id")
	if err != nil {
		return err
	}
	days, err := handlers.QueryStatsDays(c)
	if err != nil {
		return err
	}
	return p.renderScorecard(c, id, days, http.StatusOK, nil)
}

// renderScorecard renders agent id's scorecard page over days with status; form, when
// set, is the canary form as typed with its errors (canary.go).
func (p *Pages) renderScorecard(c echo.Context, id int64, days, status int, form *agentpage.CanaryForm) error {
	st, err := p.svc.Stats.AgentStats(c.Request().Context(), SignedIn(c), id, days)
	if err != nil {
		return err
	}
	sc := st.Scorecard
	v := agentpage.View{Meta: p.meta(c, "Scorecard of "+st.Agent.Name, layout.NavAgents), ID: st.Agent.ID, Name: st.Agent.Name,
		Kind: st.Agent.Kind, Roles: st.Agent.Roles, Days: days, Window: windowText(sc.Since, sc.Until),
		Figures: scoreRow(st.Agent.Name, "", "scorecard", sc), Attempts: sc.Attempts,
		BlockedWork: sc.BlockedWork, BlockedInfra: sc.BlockedInfra, BlockedOther: sc.BlockedOther,
		Daily: dailyChart("chart-daily", "Tasks verified and blocked per day", st.Daily), Durations: histogramChart(st.Durations)}
	for _, r := range st.Roles {
		v.ByRole = append(v.ByRole, scoreRow(r.Role, "", "role-"+r.Role, r.Scorecard))
	}
	v.UsageMismatches = sc.UsageMismatches
	if v.Spend, err = p.modelSpend(c, days, id, "scorecard-model-spend"); err != nil {
		return err
	}
	if v.Honesty, err = p.honestyView(c, st, form); err != nil {
		return err
	}
	return render(c, status, agentpage.Page(v))
}

// scoreBoard is the agents page's ranking over the days the request asks for; empty
// for a live re-fetch (the agents page refreshes on every event and swaps only its
// live regions, which the ranking is not one of: it is not counted again each time).
func (p *Pages) scoreBoard(c echo.Context) (agentspage.Board, error) {
	days, err := handlers.QueryStatsDays(c)
	if err != nil || livePartial(c) {
		return agentspage.Board{Days: days}, err
	}
	b, err := p.svc.Stats.ScoreBoard(c.Request().Context(), SignedIn(c), days)
	if err != nil {
		return agentspage.Board{}, err
	}
	out := agentspage.Board{Days: days}
	for _, a := range b.Agents {
		out.Ranking = append(out.Ranking, scoreRow(a.Agent.Name, "/agents/"+strconv.FormatInt(a.Agent.ID, 10)+"/scorecard?days="+strconv.Itoa(days),
			"rank-"+a.Agent.Name, a.Scorecard))
	}
	for _, r := range b.Roles {
		out.RoleRanking = append(out.RoleRanking, scoreRow(r.Role, "", "rank-role-"+r.Role, r.Scorecard))
	}
	out.Honesty, out.HonestyModels = honestyBoard(b.Honesty, days)
	spend, err := p.modelSpend(c, days, 0, "model-spend")
	if err != nil {
		return agentspage.Board{}, err
	}
	out.Spend = &spend
	return out, nil
}

// scoreRow writes sc's figures for people.
func scoreRow(name, href, testid string, sc models.Scorecard) components.ScoreRow {
	r := components.ScoreRow{Name: name, Href: href, TestID: testid, Taken: sc.Taken, Verified: sc.Verified,
		FirstPass: percentText(sc.FirstPassRate), Revision: percentText(sc.RevisionRate), Block: percentText(sc.BlockRate),
		Median: msText(sc.MedianMS), P90: msText(sc.P90MS), Spend: sc.Spend.Summary(), Impossible: sc.Impossible}
	if sc.FirstPassRate != nil {
		r.FirstPassRate = strconv.FormatFloat(*sc.FirstPassRate, 'f', -1, 64)
	}
	if sc.Blocked > 0 {
		r.BlockSplit = fmt.Sprintf("%d work · %d infrastructure · %d other", sc.BlockedWork, sc.BlockedInfra, sc.BlockedOther)
	}
	return r
}

// percentText writes a rate as a whole percentage, "—" for none.
func percentText(r *float64) string {
	if r == nil {
		return "—"
	}
	return fmt.Sprintf("%.0f %%", *r*100)
}

// msText writes a duration in milliseconds to the second ("1h 5m", "12m 30s", "45s"),
// "—" for none.
func msText(ms *int64) string {
	if ms == nil {
		return "—"
	}
	d := (time.Duration(*ms) * time.Millisecond).Round(time.Second)
	h, m, s := int(d/time.Hour), int(d%time.Hour/time.Minute), int(d%time.Minute/time.Second)
	switch {
	case h > 0:
		return fmt.Sprintf("%dh %dm", h, m)
	case m > 0 && s == 0:
		return fmt.Sprintf("%dm", m)
	case m > 0:
		return fmt.Sprintf("%dm %ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}

// windowText names a window's days: "3 Mar – 9 Mar 2025 (UTC)".
func windowText(since, until time.Time) string {
	return since.UTC().Format("2 Jan") + " – " + until.UTC().Format("2 Jan 2006") + " (UTC)"
}

// dailyChart is one bar per day of verified (bottom) and blocked work, every day
// keyed by its date and every fifth labelled in a 30-day window.
func dailyChart(testid, title string, days []models.DayBar) components.BarChart {
	c := components.BarChart{TestID: testid, Title: title, LabelEvery: max(len(days)/7, 1),
		Summary: fmt.Sprintf("%d days; each bar is a day, its green part the tasks verified and its red part the blocks.", len(days))}
	for _, d := range days {
		c.Bars = append(c.Bars, dayBar(d.Day, components.ChartSegment{Kind: "verified", Value: d.Verified},
			components.ChartSegment{Kind: "blocked", Value: d.Blocked}))
	}
	return c
}

// dayBar is the bar of one day of a daily chart: labelled "2 Jan", keyed by its date.
func dayBar(day time.Time, segments ...components.ChartSegment) components.ChartBar {
	return components.ChartBar{Label: day.Format("2 Jan"), Key: day.Format(time.DateOnly), Segments: segments}
}

// histogramChart is one bar per duration bin.
func histogramChart(bins []models.HistogramBin) components.BarChart {
	c := components.BarChart{TestID: "chart-durations", Title: "Attempts by duration",
		Summary: "Each bar counts the finished attempts (passed or failed) whose duration falls in its bin."}
	for _, b := range bins {
		c.Bars = append(c.Bars, components.ChartBar{Label: b.Label, Key: b.Label,
			Segments: []components.ChartSegment{{Kind: "attempts", Value: b.Count}}})
	}
	return c
}

// livePartial reports whether the request is live.js re-fetching the page for its
// live regions (X-Partial: 1).
func livePartial(c echo.Context) bool { return c.Request().Header.Get("X-Partial") == "1" }
