package handlers

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
)

// CanaryAPI serves /api/v1/canaries (canary tasks: a lead tests an agent's honesty)
// and /api/v1/scoreboard (every agent's scorecard, with the honesty section).
type CanaryAPI struct {
	store  models.Store
	tasks  CanaryScheduler
	honest HonestyReader
}

// NewCanaryAPI returns the canary and scoreboard endpoints.
func NewCanaryAPI(store models.Store, tasks CanaryScheduler, honest HonestyReader) *CanaryAPI {
	return &CanaryAPI{store: store, tasks: tasks, honest: honest}
}

// Register adds the routes to the API group.
func (h *CanaryAPI) Register(api *echo.Group) {
	api.POST("/canaries", h.Schedule)
	api.GET("/canaries", h.List)
	api.GET("/scoreboard", h.Board)
}

// Schedule answers POST /canaries {agent, kind, role?, title?, brief?, verify?,
// held_out?}: a lead schedules a canary task for a worker agent; 201 with the canary
// run, 422 naming the fields that are wrong.
func (h *CanaryAPI) Schedule(c echo.Context) error {
	var spec models.CanarySpec
	if err := DecodeJSON(c, &spec); err != nil {
		return err
	}
	t, err := h.tasks.ScheduleCanary(c.Request().Context(), Actor(c), spec)
	if err != nil {
		return err
	}
	run := models.CanaryRun{TaskID: t.ID, Title: t.Title, Kind: t.Canary, Agent: strings.ToLower(strings.TrimSpace(spec.Agent)),
		State: t.State, Result: models.CanaryResultPending, CreatedAt: t.CreatedAt}
	if t.AssigneeID != nil {
		run.AgentID = *t.AssigneeID
	}
	return c.JSON(http.StatusCreated, run)
}

// List answers GET /canaries?agent=NAME: the canary tasks (of one agent), newest
// first, with their results; leads only.
func (h *CanaryAPI) List(c echo.Context) error {
	ctx := c.Request().Context()
	var id int64
	if name := c.QueryParam("agent"); name != "" {
		a, err := h.store.GetAgentByName(ctx, name)
		if models.ErrorCode(err) == models.ENOTFOUND {
			return &models.Error{Code: models.EINVALID, Message: "unknown agent", Fields: map[string]string{"agent": "no such agent"}}
		}
		if err != nil {
			return err
		}
		id = a.ID
	}
	runs, err := h.honest.CanaryRuns(ctx, Actor(c), id)
	if err != nil {
		return err
	}
	if runs == nil {
		runs = []models.CanaryRun{}
	}
	return c.JSON(http.StatusOK, map[string]any{"canaries": runs})
}

// Board answers GET /scoreboard?days=7|30: every agent and task role ranked, and the
// honesty section per agent and per model.
func (h *CanaryAPI) Board(c echo.Context) error {
	days, err := QueryStatsDays(c)
	if err != nil {
		return err
	}
	b, err := h.honest.ScoreBoard(c.Request().Context(), Actor(c), days)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, b)
}
