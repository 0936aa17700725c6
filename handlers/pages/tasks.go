package pages

import (
	"context"
	"sort"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
	"github.com/countersign/countersign/web/pages/tasks"
)

// tasksPageSize is the number of tasks per page of the list.
const tasksPageSize = 50

// tasksPage answers GET /tasks?state=&goal=&assignee=&role=&after=.
func (p *Pages) tasksPage(c echo.Context) error {
	ctx := c.Request().Context()
	dir, err := p.agents(ctx)
	if err != nil {
		return err
	}
	v := tasks.View{Filter: tasks.Filter{State: c.QueryParam("state"), Goal: c.QueryParam("goal"),
		Assignee: c.QueryParam("assignee"), Role: c.QueryParam("role")}}
	var fe models.FieldErrors
	f := models.TaskFilter{Limit: tasksPageSize + 1, Role: v.Filter.Role} // one more: is there a next page?
	if s := v.Filter.State; s != "" {
		if models.ValidTaskState(s) {
			f.State = models.TaskState(s)
		} else {
			fe.Add("state", "must be a task state")
		}
	}
	if g := v.Filter.Goal; g != "" {
		n, err := strconv.ParseInt(g, 10, 64)
		if err != nil || n <= 0 {
			fe.Add("goal", "must be a goal number")
		}
		f.GoalID = n
	}
	if a := v.Filter.Assignee; a != "" {
		for _, ag := range dir.list {
			if ag.Name == a {
				f.AssigneeID = ag.ID
			}
		}
		if f.AssigneeID == 0 {
			fe.Add("assignee", "no agent named "+a)
		}
	}
	if after := c.QueryParam("after"); after != "" {
		n, err := strconv.ParseInt(after, 10, 64)
		if err == nil && n > 0 {
			f.AfterID, v.Filter.After = n, n
		}
	}
	v.Errors = fe
	if len(fe) == 0 {
		list, err := p.svc.Store().ListTasks(ctx, f)
		if err != nil {
			return err
		}
		if len(list) > tasksPageSize {
			list = list[:tasksPageSize]
			v.Next = v.Filter.Href(list[tasksPageSize-1].ID)
		}
		for _, t := range list {
			r := tasks.Row{ID: t.ID, Title: t.Title, State: string(t.State), Override: t.Override, Role: t.Role, Assignee: dir.name(t.AssigneeID)}
			if t.GoalID != nil {
				r.GoalID = *t.GoalID
			}
			v.Tasks = append(v.Tasks, r)
		}
	}
	if v.Filter.After > 0 {
		v.First = v.Filter.Href(0)
	}
	v.States = []components.Option{{Value: "", Label: "any state"}}
	for _, s := range models.TaskStates {
		v.States = append(v.States, components.Option{Value: string(s), Label: components.StateLabel(string(s))})
	}
	v.Agents = dir.options("anyone")
	v.Roles = roleOptions(dir, v.Filter.Role)
	v.Meta = p.meta(c, "Tasks", layout.NavTasks)
	v.Meta.LiveRefresh = "any"
	return ok(c, tasks.Page(v))
}

// roleOptions lists the roles agents hold (plus the current filter), for the filter.
func roleOptions(dir *directory, cur string) []components.Option {
	seen := map[string]bool{}
	if cur != "" {
		seen[cur] = true
	}
	for _, a := range dir.list {
		for _, r := range a.Roles {
			seen[r] = true
		}
	}
	roles := make([]string, 0, len(seen))
	for r := range seen {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	out := []components.Option{{Value: "", Label: "any role"}}
	for _, r := range roles {
		out = append(out, components.Option{Value: r})
	}
	return out
}

// goalTitle returns the title of goal id, "" when it cannot be read.
func (p *Pages) goalTitle(ctx context.Context, id *int64) string {
	if id == nil {
		return ""
	}
	g, err := p.svc.Store().GetGoal(ctx, *id)
	if err != nil {
		return "goal #" + itoa(*id)
	}
	return g.Title
}
