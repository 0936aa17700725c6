package pages

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
	"github.com/countersign/countersign/web/pages/goals"
)

// goalsPageSize is the number of goals per page of the list; each row costs one
// count query.
const goalsPageSize = 100

// goalsPage answers GET /goals?state=&sort=&after=: a page of goals newest first (by
// number, last update or creation), with links to the next (older) page and back to
// the newest, as the task list pages.
func (p *Pages) goalsPage(c echo.Context) error {
	ctx := c.Request().Context()
	v := goals.View{State: c.QueryParam("state"), Sort: listSort(c.QueryParam("sort")), Sorts: sortOptions()}
	v.States = []components.Option{{Value: "", Label: "any state"}}
	valid := false
	for _, s := range models.GoalStates {
		v.States = append(v.States, components.Option{Value: string(s), Label: components.StateLabel(string(s))})
		valid = valid || string(s) == v.State
	}
	if !valid {
		v.State = ""
	}
	f := models.GoalFilter{State: models.GoalState(v.State), Sort: v.Sort, Limit: goalsPageSize + 1} // one more: is there a next page?
	if after := c.QueryParam("after"); after != "" {
		n, err := strconv.ParseInt(after, 10, 64)
		if err == nil && n > 0 {
			f.AfterID, v.After = n, n
		}
	}
	list, err := p.svc.Store().ListGoals(ctx, f)
	if err != nil {
		return err
	}
	if len(list) > goalsPageSize {
		list = list[:goalsPageSize]
		v.Next = v.Href(list[goalsPageSize-1].ID)
	}
	if v.After > 0 {
		v.First = v.Href(0)
	}
	ids := make([]int64, len(list))
	for i, g := range list {
		ids[i] = g.ID
	}
	byGoal, err := p.svc.Store().CountTasksByGoal(ctx, ids)
	if err != nil {
		return err
	}
	for _, g := range list {
		done, total := progress(byGoal[g.ID])
		v.Goals = append(v.Goals, goals.Row{ID: g.ID, Title: g.Title, State: string(g.State), Project: g.Project,
			Done: done, Total: total, CreatedAt: g.CreatedAt})
	}
	v.Meta = p.meta(c, "Goals", layout.NavGoals)
	v.Meta.LiveRefresh = "any"
	return ok(c, goals.Page(v))
}

// progress returns the finished (verified or cancelled) and total task counts.
func progress(counts map[models.TaskState]int) (done, total int) {
	for _, n := range counts {
		total += n
	}
	return counts[models.TaskVerified] + counts[models.TaskCancelled], total
}

// newGoalPage answers GET /goals/new.
func (p *Pages) newGoalPage(c echo.Context) error {
	return ok(c, goals.NewPage(goals.NewView{Meta: p.meta(c, "New goal", layout.NavGoals), CSRF: CSRFToken(c)}))
}

// createGoal answers POST /goals: any signed-in agent may create a goal.
func (p *Pages) createGoal(c echo.Context) error {
	g := &models.Goal{Title: c.FormValue("title"), Description: c.FormValue("description"), Project: c.FormValue("project")}
	err := p.svc.Goals.CreateGoal(c.Request().Context(), SignedIn(c), g)
	if isInvalid(err) {
		v := goals.NewView{CSRF: CSRFToken(c), Title: g.Title, Description: g.Description, Project: g.Project, Errors: fieldErrors(err)}
		v.Meta = p.meta(c, "New goal", layout.NavGoals)
		return render(c, http.StatusUnprocessableEntity, goals.NewPage(v))
	}
	if err != nil {
		return err
	}
	return done(c, "/goals/"+itoa(g.ID), "Goal created.")
}
