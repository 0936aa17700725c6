package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/contract"
)

// BudgetAPI sets what tasks and goals may spend.
type BudgetAPI struct {
	tasks TaskBudgeter
	goals GoalBudgeter
}

// NewBudgetAPI returns the budget handlers over svc.
func NewBudgetAPI(tasks TaskBudgeter, goals GoalBudgeter) *BudgetAPI {
	return &BudgetAPI{tasks: tasks, goals: goals}
}

// Task answers POST /tasks/{id}/budget {max_cost_usd, max_tokens}: a lead or exec
// sets the task's budget; a task a budget stopped resumes.
func (h *BudgetAPI) Task(c echo.Context) error {
	id, b, err := budgetRequest(c)
	if err != nil {
		return err
	}
	t, err := h.tasks.RaiseTaskBudget(c.Request().Context(), Actor(c), id, b)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, TaskFor(Actor(c), t))
}

// Goal answers POST /goals/{id}/budget {max_cost_usd, max_tokens}: a lead sets the
// goal's budget ({} removes it); its tasks a budget stopped resume.
func (h *BudgetAPI) Goal(c echo.Context) error {
	id, b, err := budgetRequest(c)
	if err != nil {
		return err
	}
	g, err := h.goals.SetGoalBudget(c.Request().Context(), Actor(c), id, &b)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, g)
}

// budgetRequest reads the path's id and the body's budget.
func budgetRequest(c echo.Context) (int64, contract.Budget, error) {
	var b contract.Budget
	id, err := PathID(c, "id")
	if err == nil {
		err = DecodeJSON(c, &b)
	}
	return id, b, err
}
