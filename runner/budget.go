package runner

import (
	"context"
	"errors"
	"time"

	"github.com/countersign/countersign/models"
)

// Why an attempt did not start for its budgets.
var (
	// errBudgetWait: running attempts' reservations hold what is left; the task's
	// goroutine tries again after budgetWait.
	errBudgetWait = errors.New("budget held by running attempts")
	// errBudgetSpent: a budget is spent; the task was blocked at stage budget.
	errBudgetSpent = errors.New("budget spent")
)

// budgetPoll is how long a task first waits for the reservations under its budget to
// settle before it checks again; each further wait doubles, up to budgetPollMax, since
// every check prepares the attempt again (for a worktree, git runs).
const (
	budgetPoll    = 250 * time.Millisecond
	budgetPollMax = 5 * time.Second
)

// budgetWait is how long the n-th wait in a row lasts.
func budgetWait(n int) time.Duration {
	d := budgetPoll
	for i := 1; i < n && d < budgetPollMax; i++ {
		d *= 2
	}
	return min(d, budgetPollMax)
}

// reserveBudget decides, in tx with the task's row locked, whether tr's next attempt
// may start under its task's, goal's and agent's budgets, and what it reserves. A
// spent budget blocks the task (stage budget) in tx.
func (p *attemptRunner) reserveBudget(ctx context.Context, tx models.Tx, tr *taskRun) (models.BudgetDecision, error) {
	limits, err := p.svc.Attempts.BudgetLimits(ctx, tx, &tr.task, &tr.agent)
	if err != nil || len(limits) == 0 {
		return models.BudgetDecision{}, err
	}
	d := models.DecideBudget(limits)
	switch {
	case d.Spent != nil:
		if err := p.svc.Attempts.BlockOnBudget(ctx, tx, p.runner, &tr.task, *d.Spent); err != nil {
			return d, err
		}
		p.log.Info("budget spent: task blocked before its attempt", "task_id", tr.task.ID, "budget", d.Spent.Describe())
		return d, errBudgetSpent
	case d.Wait:
		return d, errBudgetWait
	}
	return d, nil
}
