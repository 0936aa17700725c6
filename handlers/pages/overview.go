package pages

import (
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
	"github.com/countersign/countersign/web/pages/overview"
)

// feedLength is the number of events the overview's feed starts with.
const feedLength = 30

// overviewPage answers GET /: task and goal counts, the inbox count, the runner pool
// and the newest events.
func (p *Pages) overviewPage(c echo.Context) error {
	ctx := c.Request().Context()
	st := p.svc.Store()
	counts, err := st.CountTasks(ctx, 0)
	if err != nil {
		return err
	}
	v := overview.View{}
	for _, s := range models.TaskStates {
		v.Tasks = append(v.Tasks, overview.Tile{Label: components.StateLabel(string(s)), State: string(s), Count: counts[s], Href: "/tasks?state=" + string(s)})
		v.TotalTasks += counts[s]
	}
	gc, err := st.CountGoals(ctx)
	if err != nil {
		return err
	}
	for _, s := range models.GoalStates {
		v.Goals = append(v.Goals, overview.Tile{Label: "goals " + components.StateLabel(string(s)), State: string(s), Count: gc[s], Href: "/goals?state=" + string(s)})
	}
	if v.Pool, err = p.pool(c); err != nil {
		return err
	}
	events, _, err := p.recentEvents(ctx, feedLength)
	if err != nil {
		return err
	}
	for _, e := range events {
		it := components.FeedItem{ID: e.ID, Type: e.Type, At: e.CreatedAt}
		if e.TaskID != nil {
			it.TaskID = *e.TaskID
		}
		if e.GoalID != nil {
			it.GoalID = *e.GoalID
		}
		v.Feed = append(v.Feed, it)
	}
	if v.Queue, err = p.queueList(c, "/", "", overviewQueue); err != nil {
		return err
	}
	v.Meta = p.meta(c, "Overview", layout.NavOverview)
	v.Inbox = v.Meta.InboxCount
	today, err := st.SpendOf(ctx, models.SpendScope{Since: time.Now().UTC().Truncate(24 * time.Hour)})
	if err != nil {
		return err
	}
	v.SpentToday = today.Summary()
	v.Meta.LiveRefresh = "any"
	return ok(c, overview.Page(v))
}

// pool lists the worker agents: busy while they hold an unexpired lease on a task in
// progress, with those tasks.
func (p *Pages) pool(c echo.Context) ([]overview.Worker, error) {
	ctx := c.Request().Context()
	st := p.svc.Store()
	agents, err := st.ListAgents(ctx)
	if err != nil {
		return nil, err
	}
	running, err := st.ListTasks(ctx, models.TaskFilter{State: models.TaskInProgress, Limit: 1000})
	if err != nil {
		return nil, err
	}
	now := time.Now()
	busy := map[int64][]overview.TaskRef{}
	for _, t := range running {
		if t.AssigneeID != nil && t.LeaseUntil != nil && t.LeaseUntil.After(now) {
			busy[*t.AssigneeID] = append(busy[*t.AssigneeID], overview.TaskRef{ID: t.ID, Title: t.Title})
		}
	}
	var out []overview.Worker
	for _, a := range agents {
		if a.Kind != models.KindWorker {
			continue
		}
		w := overview.Worker{Name: a.Name, Roles: strings.Join(a.Roles, ", "), Concurrency: a.Concurrency, Tasks: busy[a.ID], Status: "idle"}
		switch {
		case a.Disabled:
			w.Status = "disabled"
		case len(w.Tasks) > 0:
			w.Status = "busy"
		}
		out = append(out, w)
	}
	return out, nil
}
