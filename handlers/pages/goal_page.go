package pages

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
	"github.com/countersign/countersign/web/pages/goal"
)

// goalTasksPerState caps the tasks the goal page lists per state: a goal may hold
// 100,000 tasks; the rest are one click away in the filtered task list.
const goalTasksPerState = 20

// fixRows is the number of fix-task rows of the reject form; blank rows are ignored.
const fixRows = 3

// goalPage answers GET /goals/:id.
func (p *Pages) goalPage(c echo.Context) error {
	id, err := handlers.PathID(c, "id")
	if err != nil {
		return err
	}
	v, err := p.goalView(c, id)
	if err != nil {
		return err
	}
	return ok(c, goal.Page(*v))
}

// goalView loads the goal page's model with empty forms.
func (p *Pages) goalView(c echo.Context, id int64) (*goal.View, error) {
	ctx := c.Request().Context()
	st := p.svc.Store()
	g, err := st.GetGoal(ctx, id)
	if err != nil {
		return nil, err
	}
	last, err := p.lastEventID(ctx)
	if err != nil {
		return nil, err
	}
	counts, err := p.goalCounts(ctx, id, last)
	if err != nil {
		return nil, err
	}
	dir, err := p.agents(ctx)
	if err != nil {
		return nil, err
	}
	me := SignedIn(c)
	v := &goal.View{CSRF: CSRFToken(c), ID: g.ID, Title: g.Title, Description: g.Description, Project: g.Project,
		State: string(g.State), Notes: g.Notes, VerifierName: dir.name(g.VerifierID),
		CanDecide:  me.HasRole(models.RoleLead) && g.State == models.GoalPendingVerify,
		CanRun:     me.HasRole(models.RoleLead) && g.State != models.GoalVerified,
		CanRecheck: mayRecheck(me) && counts[models.TaskVerified] > 0 && p.d.Recheck != nil,
		Agents:     dir.options("— unassigned —")}
	v.Done, v.Total = progress(counts)
	v.Deferred = deferredView(g.Deferred)
	groups, err := p.goalGroups(ctx, id, counts, dir)
	if err != nil {
		return nil, err
	}
	v.Groups = groups
	if v.CanRun {
		tpls, err := st.ListTemplates(ctx)
		if err != nil {
			return nil, err
		}
		for _, t := range tpls {
			v.Templates = append(v.Templates, components.Option{Value: t.Name, Label: t.Name + " (v" + itoa(int64(t.Version)) + ")"})
		}
	}
	if me.HasRole(models.RoleLead) && p.d.Lander != nil {
		m, err := p.svc.Merges.GoalMergeable(ctx, id, p.d.Lander)
		if err != nil {
			return nil, err
		}
		v.CanMerge, v.MergeWhyNot = m.OK, m.Reason
	}
	v.Reject.Fixes = make([]goal.FixRow, fixRows)
	if v.Budget, err = p.goalBudgetView(ctx, me, g); err != nil {
		return nil, err
	}
	if v.Progress, err = p.goalProgress(ctx, me, id); err != nil {
		return nil, err
	}
	if v.Runs, err = p.goalRuns(ctx, id); err != nil {
		return nil, err
	}
	v.Meta = p.meta(c, g.Title, layout.NavGoals)
	v.Meta.LiveRefresh = "goal:" + itoa(id)
	return v, nil
}

// goalGroups lists up to goalTasksPerState newest tasks of each state of goal id.
// One query for the newest tasks of the goal usually fills every group; only the
// states it leaves short get a query of their own.
func (p *Pages) goalGroups(ctx context.Context, id int64, counts map[models.TaskState]int, dir *directory) ([]goal.Group, error) {
	st := p.svc.Store()
	byState := map[models.TaskState][]models.Task{}
	newest, err := st.ListTasks(ctx, models.TaskFilter{GoalID: id, Limit: goalTasksPerState * len(models.TaskStates)})
	if err != nil {
		return nil, err
	}
	for _, t := range newest {
		if len(byState[t.State]) < goalTasksPerState {
			byState[t.State] = append(byState[t.State], t)
		}
	}
	var out []goal.Group
	for _, s := range models.TaskStates {
		n := counts[s]
		if n == 0 {
			continue
		}
		tasks := byState[s]
		if len(tasks) < min(n, goalTasksPerState) && len(newest) == goalTasksPerState*len(models.TaskStates) {
			if tasks, err = st.ListTasks(ctx, models.TaskFilter{GoalID: id, State: s, Limit: goalTasksPerState}); err != nil {
				return nil, err
			}
		}
		grp := goal.Group{State: string(s), Count: n}
		for _, t := range tasks {
			grp.Tasks = append(grp.Tasks, goal.TaskRow{ID: t.ID, Title: t.Title, Role: t.Role, Assignee: dir.name(t.AssigneeID),
				State: string(t.State), Override: t.Override})
		}
		out = append(out, grp)
	}
	return out, nil
}

// verifyGoal answers POST /goals/:id/verify with notes (leads only; the service decides).
func (p *Pages) verifyGoal(c echo.Context) error {
	id, err := handlers.PathID(c, "id")
	if err != nil {
		return err
	}
	notes := c.FormValue("notes")
	_, err = p.svc.Goals.VerifyGoal(c.Request().Context(), SignedIn(c), id, notes)
	if isInvalid(err) {
		return p.goalForm(c, id, func(v *goal.View) { v.Verify = goal.VerifyForm{Notes: notes, Errors: fieldErrors(err)} })
	}
	if err != nil {
		return err
	}
	return done(c, backTo(c, "/goals/"+itoa(id)), "Goal verified.")
}

// rejectGoal answers POST /goals/:id/reject with a reason and fix-task rows
// (fix_title, fix_brief, fix_role, fix_assignee, repeated); blank rows are ignored.
func (p *Pages) rejectGoal(c echo.Context) error {
	id, err := handlers.PathID(c, "id")
	if err != nil {
		return err
	}
	form, err := c.FormParams()
	if err != nil {
		return models.Errorf(models.EBADREQUEST, "the form could not be read")
	}
	reason := form.Get("reason")
	rows := make([]goal.FixRow, max(fixRows, len(form["fix_title"])))
	var specs []models.TaskSpec
	var index []int // index[i] is the row of specs[i]
	for i := range rows {
		r := &rows[i]
		r.Title, r.Brief, r.Role, r.Assignee = nth(form["fix_title"], i), nth(form["fix_brief"], i), nth(form["fix_role"], i), nth(form["fix_assignee"], i)
		if strings.TrimSpace(r.Title+r.Brief+r.Role+r.Assignee) == "" {
			continue
		}
		specs = append(specs, models.TaskSpec{Title: r.Title, Brief: r.Brief, Role: r.Role, Assignee: r.Assignee})
		index = append(index, i)
	}
	_, err = p.svc.Goals.RejectGoal(c.Request().Context(), SignedIn(c), id, reason, specs)
	if isInvalid(err) {
		top := map[string]string{}
		for k, msg := range fieldErrors(err) {
			if n, field, ok := parseFixKey(k); ok && n < len(index) {
				r := &rows[index[n]]
				if r.Errors == nil {
					r.Errors = map[string]string{}
				}
				r.Errors[field] = msg
				continue
			}
			top[k] = msg
		}
		for k, msg := range top {
			switch {
			case k == "reason" || k == "fix_tasks":
			case k == "agent" && len(index) == 1:
				// An assignee error names no row; with one row it is that one.
				rows[index[0]].Errors = map[string]string{"agent": msg}
				delete(top, k)
			default:
				top["fix_tasks"] = strings.TrimSpace(top["fix_tasks"] + " " + k + ": " + msg)
				delete(top, k)
			}
		}
		return p.goalForm(c, id, func(v *goal.View) { v.Reject = goal.RejectForm{Reason: reason, Fixes: rows, Errors: top} })
	}
	if err != nil {
		return err
	}
	return done(c, "/goals/"+itoa(id), "Goal rejected; "+itoa(int64(len(specs)))+" fix task(s) created.")
}

// startRun answers POST /goals/:id/runs with a template name and name=value params.
func (p *Pages) startRun(c echo.Context) error {
	id, err := handlers.PathID(c, "id")
	if err != nil {
		return err
	}
	name, raw := c.FormValue("template"), c.FormValue("params")
	params, perr := parseParams(raw)
	var tasks []models.Task
	if perr == nil {
		_, tasks, err = p.svc.Templates.StartRun(c.Request().Context(), SignedIn(c), id, name, 0, params)
	} else {
		err = perr
	}
	if isInvalid(err) {
		return p.goalForm(c, id, func(v *goal.View) { v.Run = goal.RunForm{Template: name, Params: raw, Errors: fieldErrors(err)} })
	}
	if err != nil {
		return err
	}
	return done(c, "/goals/"+itoa(id), "Run of "+name+" started with "+itoa(int64(len(tasks)))+" task(s).")
}

// goalForm re-renders the goal page with a form's input and errors (422).
func (p *Pages) goalForm(c echo.Context, id int64, set func(v *goal.View)) error {
	v, err := p.goalView(c, id)
	if err != nil {
		return err
	}
	set(v)
	return render(c, http.StatusUnprocessableEntity, goal.Page(*v))
}

// parseParams reads "name=value" lines.
func parseParams(raw string) (map[string]string, error) {
	out := map[string]string{}
	for line := range strings.Lines(raw) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, val, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, &models.Error{Code: models.EINVALID, Message: "validation failed",
				Fields: map[string]string{"params": "each line must be name=value"}}
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(val)
	}
	return out, nil
}

func nth(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return ""
}

// deferredView is the goal page's deferred checks card; nil when the goal has none.
func deferredView(d *models.DeferredChecks) *goal.Deferred {
	if d == nil {
		return nil
	}
	v := &goal.Deferred{Status: d.Status, Diagnosis: d.Diagnosis, Output: d.Output}
	for _, c := range d.Criteria {
		desc := c.Criterion.Activity
		if c.Criterion.Description != "" {
			desc += ": " + c.Criterion.Description
		}
		v.Criteria = append(v.Criteria, fmt.Sprintf("%s (task #%d)", desc, c.TaskID))
	}
	return v
}
