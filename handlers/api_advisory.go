package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
)

// AdvisoryAPI answers the advisory prompt of a held advisory task (see
// models.ResolveAdvisoryPrompt).
type AdvisoryAPI struct{ tasks AdvisoryResolver }

// NewAdvisoryAPI returns the advisory prompt endpoint over svc.
func NewAdvisoryAPI(tasks AdvisoryResolver) *AdvisoryAPI { return &AdvisoryAPI{tasks: tasks} }

// Register adds POST /tasks/:id/advisory to g (the /api/v1 group).
func (h *AdvisoryAPI) Register(g *echo.Group) {
	g.POST("/tasks/:id/advisory", h.Resolve)
}

// Resolve answers POST /tasks/{id}/advisory {action, criteria, reason}: action is
// proceed, make_verifiable (with the criteria of the verifiable contract) or cancel.
// It returns the task (200). A person who is not a lead or exec is 403 (rule
// lead_or_exec), a task with no prompt waiting 409 (rule advisory_prompt), bad
// criteria 422 with field errors and nothing changed.
func (h *AdvisoryAPI) Resolve(c echo.Context) error {
	id, err := PathID(c, "id")
	if err != nil {
		return err
	}
	var in models.AdvisoryDecision
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	t, err := h.tasks.ResolveAdvisoryPrompt(c.Request().Context(), Actor(c), id, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, TaskFor(Actor(c), t))
}
