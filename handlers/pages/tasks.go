package pages

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
	"github.com/countersign/countersign/web/pages/tasks"
)

// tasksPageSize is the number of tasks per page of the list.
const tasksPageSize = 50

// tasksPage answers GET /tasks?state=&goal=&assignee=&role=&sort=&after=.
func (p *Pages) tasksPage(c echo.Context) error {
	ctx := c.Request().Context()
	dir, err := p.agents(ctx)
	if err != nil {
		return err
	}
	v, f := taskFilter(c, dir)
	if len(v.Errors) == 0 {
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
	v.Sorts = sortOptions()
	v.Meta = p.meta(c, "Tasks", layout.NavTasks)
	v.Meta.LiveRefresh = "any"
	return ok(c, tasks.Page(v))
}

// taskFilter reads the task list's filter from the query: the view's copy of it
// with its field errors, and the store's.
func taskFilter(c echo.Context, dir *directory) (tasks.View, models.TaskFilter) {
	v := tasks.View{Filter: tasks.Filter{State: c.QueryParam("state"), Goal: c.QueryParam("goal"),
		Assignee: c.QueryParam("assignee"), Role: c.QueryParam("role"), Sort: listSort(c.QueryParam("sort"))}}
	var fe models.FieldErrors
	f := models.TaskFilter{Limit: tasksPageSize + 1, Role: v.Filter.Role, Sort: v.Filter.Sort} // one more: is there a next page?
	if s := v.Filter.State; s != "" {
		if models.ValidTaskState(s) {
			f.State = models.TaskState(s)
		} else {
			fe.Add("state", "must be a task state")
		}
	}
	if g := strings.TrimPrefix(strings.TrimSpace(v.Filter.Goal), "#"); g != "" {
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
	return v, f
}

// listSort returns s when it names a list order other than the default, else "".
func listSort(s string) string {
	if s != models.ListSortID && slices.Contains(models.ListSorts, s) {
		return s
	}
	return ""
}

// sortOptions lists the list orders, the default (by number) first as "".
func sortOptions() []components.Option {
	return []components.Option{{Value: "", Label: "newest number"}, {Value: models.ListSortUpdated, Label: "last updated"},
		{Value: models.ListSortCreated, Label: "newest created"}}
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
