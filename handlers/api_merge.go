package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
)

// MergeAPI lands verified task commits on their target branches.
type MergeAPI struct {
	merges Merger
	lander models.Lander
}

// NewMergeAPI returns the merge handlers; a nil lander (a server without the runner)
// refuses every merge with 409.
func NewMergeAPI(merges Merger, lander models.Lander) *MergeAPI {
	return &MergeAPI{merges: merges, lander: lander}
}

// Task answers POST /tasks/{id}/merge: a lead merges the task's verified commit into
// its agent's target branch. 409 merge_only_verified when the branch is not what was
// verified, 409 merge_conflict (with a fix task created) on a conflict.
func (h *MergeAPI) Task(c echo.Context) error {
	id, err := PathID(c, "id")
	if err != nil {
		return err
	}
	landed, err := h.merges.MergeTask(c.Request().Context(), Actor(c), id, h.lander)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, landed)
}

// Goal answers POST /goals/{id}/merge: a lead merges the verified commits of a verified
// goal's tasks, oldest first. A refusal midway answers with its error; what landed
// before it stays landed (and recorded).
func (h *MergeAPI) Goal(c echo.Context) error {
	id, err := PathID(c, "id")
	if err != nil {
		return err
	}
	landed, err := h.merges.MergeGoal(c.Request().Context(), Actor(c), id, h.lander)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"merged": landed})
}

// Branch answers GET /tasks/{id}/branch: where the task's work stands — its branch's
// commits ahead of and behind the target, whether the tip is what was verified, and
// the diff from its base.
func (h *MergeAPI) Branch(c echo.Context) error {
	id, err := PathID(c, "id")
	if err != nil {
		return err
	}
	r, err := h.merges.TaskBranch(c.Request().Context(), Actor(c), id, h.lander)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}
