package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// GoalsAPI serves /api/v1/goals.
type GoalsAPI struct {
	store models.Store
	goals GoalDecisions
	runs  RunStarter
}

// NewGoalsAPI returns the goal endpoints over svc.
func NewGoalsAPI(store models.Store, goals GoalDecisions, runs RunStarter) *GoalsAPI {
	return &GoalsAPI{store: store, goals: goals, runs: runs}
}

type goalInput struct {
	Title       string `json:"title"`
	Description string `json:"description"`
	Project     string `json:"project"`
	// Budget caps what the goal's tasks may spend.
	Budget *contract.Budget `json:"budget"`
}

// Create answers POST /goals.
func (h *GoalsAPI) Create(c echo.Context) error {
	var in goalInput
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	g := &models.Goal{Title: in.Title, Description: in.Description, Project: in.Project, Budget: in.Budget}
	if err := h.goals.CreateGoal(c.Request().Context(), Actor(c), g); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, g)
}

// List answers GET /goals?state=&project=&after=&limit=: newest first, ids below after
// (keyset pagination, as for tasks).
func (h *GoalsAPI) List(c echo.Context) error {
	var fe models.FieldErrors
	f := models.GoalFilter{State: models.GoalState(c.QueryParam("state")), Project: c.QueryParam("project"),
		AfterID: QueryInt(c, "after", &fe), Limit: QueryLimit(c, &fe)}
	if f.State != "" && !validGoalState(f.State) {
		fe.Add("state", "must be one of open, active, pending_verify, verified")
	}
	if err := fe.Err(); err != nil {
		return err
	}
	goals, err := h.store.ListGoals(c.Request().Context(), f)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"goals": goals})
}

func validGoalState(s models.GoalState) bool {
	for _, g := range models.GoalStates {
		if g == s {
			return true
		}
	}
	return false
}

// Get answers GET /goals/{id}: the goal, its tasks and counts per state.
func (h *GoalsAPI) Get(c echo.Context) error {
	id, err := PathID(c, "id")
	if err != nil {
		return err
	}
	st, err := h.goals.GoalStatus(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, GoalStatusFor(Actor(c), st))
}

// Verify answers POST /goals/{id}/verify {notes} (the lead, in person).
func (h *GoalsAPI) Verify(c echo.Context) error {
	id, err := PathID(c, "id")
	if err != nil {
		return err
	}
	var in struct {
		Notes string `json:"notes"`
	}
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	g, err := h.goals.VerifyGoal(c.Request().Context(), Actor(c), id, in.Notes)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, g)
}

// Reject answers POST /goals/{id}/reject {reason, fix_tasks}.
func (h *GoalsAPI) Reject(c echo.Context) error {
	id, err := PathID(c, "id")
	if err != nil {
		return err
	}
	var in struct {
		Reason   string            `json:"reason"`
		FixTasks []models.TaskSpec `json:"fix_tasks"`
	}
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	st, err := h.goals.RejectGoal(c.Request().Context(), Actor(c), id, in.Reason, in.FixTasks)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, GoalStatusFor(Actor(c), st))
}

// StartRun answers POST /goals/{id}/runs {template, version, params}.
func (h *GoalsAPI) StartRun(c echo.Context) error {
	id, err := PathID(c, "id")
	if err != nil {
		return err
	}
	var in struct {
		Template string            `json:"template"`
		Version  int               `json:"version"`
		Params   map[string]string `json:"params"`
	}
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	if in.Template == "" {
		return &models.Error{Code: models.EINVALID, Message: "validation failed", Fields: map[string]string{"template": "is required"}}
	}
	if _, err := h.store.GetGoal(c.Request().Context(), id); err != nil {
		return err
	}
	run, tasks, err := h.runs.StartRun(c.Request().Context(), Actor(c), id, in.Template, in.Version, in.Params)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, map[string]any{"run": run, "tasks": TasksFor(Actor(c), tasks)})
}
