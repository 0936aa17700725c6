package pages

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/web/pages/goal"
	"github.com/countersign/countersign/web/pages/task"
)

// budgetView adds what task t spent and may spend to the task page, with the form a
// lead or exec raises its budget with.
func (p *Pages) budgetView(ctx context.Context, me *models.Agent, t *models.Task, v *task.View) error {
	spend, err := p.svc.Store().SpendOf(ctx, models.SpendScope{TaskID: t.ID})
	if err != nil {
		return err
	}
	v.Budget = task.BudgetView{Spent: spend.Summary(), Cap: t.Contract.Budget.Summary(),
		CanRaise: me.HasRole(models.RoleLead) || me.HasRole(models.RoleExec)}
	if b := t.Contract.Budget; b != nil {
		v.Budget.Values = budgetValues(b)
	}
	if t.State == models.TaskBlocked {
		items, err := p.svc.Store().ListInbox(ctx, models.InboxFilter{TaskID: t.ID, Kind: models.InboxBlocked})
		if err != nil {
			return err
		}
		v.Budget.Stopped = models.BlockedItemAt(items, models.StageBudget)
	}
	return nil
}

// budgetValues are a budget's form fields as typed.
func budgetValues(b *contract.Budget) map[string]string {
	out := map[string]string{}
	if b.MaxCostUSD != nil {
		out["max_cost_usd"] = strconv.FormatFloat(*b.MaxCostUSD, 'f', -1, 64)
	}
	if b.MaxTokens != nil {
		out["max_tokens"] = strconv.FormatInt(*b.MaxTokens, 10)
	}
	return out
}

// budgetForm reads max_cost_usd and max_tokens (each optional; blank is no cap).
func budgetForm(c echo.Context) (contract.Budget, map[string]string, error) {
	var b contract.Budget
	var fe models.FieldErrors
	values := map[string]string{"max_cost_usd": strings.TrimSpace(c.FormValue("max_cost_usd")), "max_tokens": strings.TrimSpace(c.FormValue("max_tokens"))}
	if s := values["max_cost_usd"]; s != "" {
		if v, err := strconv.ParseFloat(strings.TrimPrefix(s, "$"), 64); err != nil {
			fe.Add("max_cost_usd", "must be an amount in USD, like 2.50")
		} else {
			b.MaxCostUSD = &v
		}
	}
	if s := values["max_tokens"]; s != "" {
		if v, err := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64); err != nil {
			fe.Add("max_tokens", "must be a whole number of tokens")
		} else {
			b.MaxTokens = &v
		}
	}
	return b, values, fe.Err()
}

// taskBudget answers POST /tasks/:id/budget: a lead or exec sets the task's budget; a
// task a budget stopped resumes. Field errors re-render the page (422).
func (p *Pages) taskBudget(c echo.Context) error {
	id, err := handlers.PathID(c, "id")
	if err != nil {
		return err
	}
	b, values, err := budgetForm(c)
	if err == nil {
		_, err = p.svc.Tasks.RaiseTaskBudget(c.Request().Context(), SignedIn(c), id, b)
	}
	back := "/tasks/" + itoa(id)
	if c.FormValue("back") == "/inbox" {
		back = "/inbox"
		if isInvalid(err) {
			return p.inboxFormAt(c, "/tasks/"+itoa(id)+"/budget", values, fieldErrors(err))
		}
	}
	if isInvalid(err) {
		v, verr := p.taskView(c, id)
		if verr != nil {
			return verr
		}
		v.Budget.Values, v.Budget.Errors = values, fieldErrors(err)
		return render(c, http.StatusUnprocessableEntity, task.Page(*v))
	}
	if err != nil {
		return err
	}
	return done(c, back, "Task #"+itoa(id)+": budget set to "+b.Summary()+".")
}

// goalBudget answers POST /goals/:id/budget: a lead sets the goal's budget (blank
// removes it); its tasks a budget stopped resume.
func (p *Pages) goalBudget(c echo.Context) error {
	id, err := handlers.PathID(c, "id")
	if err != nil {
		return err
	}
	b, values, err := budgetForm(c)
	if err == nil {
		_, err = p.svc.Goals.SetGoalBudget(c.Request().Context(), SignedIn(c), id, &b)
	}
	if isInvalid(err) {
		v, verr := p.goalView(c, id)
		if verr != nil {
			return verr
		}
		v.Budget.Values, v.Budget.Errors = values, fieldErrors(err)
		return render(c, http.StatusUnprocessableEntity, goal.Page(*v))
	}
	if err != nil {
		return err
	}
	msg := "budget removed"
	if !b.IsZero() {
		msg = "budget set to " + b.Summary()
	}
	return done(c, "/goals/"+itoa(id), "Goal #"+itoa(id)+": "+msg+".")
}

// goalBudgetView is what goal g spent and may spend, with the lead's form.
func (p *Pages) goalBudgetView(ctx context.Context, me *models.Agent, g *models.Goal) (goal.BudgetView, error) {
	spend, err := p.svc.Store().SpendOf(ctx, models.SpendScope{GoalID: g.ID})
	if err != nil {
		return goal.BudgetView{}, err
	}
	v := goal.BudgetView{Spent: spend.Summary(), Cap: g.Budget.Summary(), CanSet: me.HasRole(models.RoleLead)}
	if g.Budget != nil {
		v.Values = budgetValues(g.Budget)
	}
	return v, nil
}

// orNoBudget is b, or an empty budget for none.
func orNoBudget(b *contract.Budget) *contract.Budget {
	if b == nil {
		return &contract.Budget{}
	}
	return b
}
