package models

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/models/contract"
)

// StageBudget is the stage of a task stopped by a budget: before an attempt, when
// what its task, goal or agent may spend is spent (no worker starts); or during one,
// when a run passes what it reserved (its processes are killed). Never charged as the
// worker's failure; a retry needs no guidance once the budget was raised.
const StageBudget = "budget"

// BudgetLimit is one cap on an attempt — its task's, its goal's or its agent's for the
// day — with what was spent against it.
type BudgetLimit struct {
	Scope  string // "task 7", "goal 2", "agent quinn today"
	Of     SpendScope
	Budget contract.Budget
	Spend  Spend
}

// BudgetDecision says whether an attempt may start: Spent names a cap finished
// attempts used up (block the task); Wait says running attempts' reservations hold
// what is left (try again when they settle); otherwise the attempt reserves
// ReserveUSD and ReserveTokens (nil: no cap of that kind).
type BudgetDecision struct {
	Spent         *BudgetLimit
	Wait          bool
	ReserveUSD    *float64
	ReserveTokens *int64
}

// DecideBudget applies limits to an attempt about to start. An attempt reserves all
// that is left of the tightest cap: attempts under one cap then start one after
// another as each settles, so however many start together, spend passes the cap by at
// most one attempt's overrun (what a run spends past its reservation before it is
// stopped, or what a worker reports only at its end).
func DecideBudget(limits []BudgetLimit) BudgetDecision {
	var d BudgetDecision
	for i := range limits {
		l := &limits[i]
		b, sp := l.Budget, l.Spend
		if c := b.MaxCostUSD; c != nil {
			if sp.CostUSD >= *c {
				d.Spent = l
				return d
			}
			left := *c - sp.CostUSD - sp.ReservedUSD
			if left <= 0 {
				d.Wait = true
			} else if d.ReserveUSD == nil || left < *d.ReserveUSD {
				d.ReserveUSD = &left
			}
		}
		if m := b.MaxTokens; m != nil {
			if sp.Tokens >= *m {
				d.Spent = l
				return d
			}
			left := *m - sp.Tokens - sp.ReservedTokens
			if left <= 0 {
				d.Wait = true
			} else if d.ReserveTokens == nil || left < *d.ReserveTokens {
				d.ReserveTokens = &left
			}
		}
	}
	if d.Wait {
		d.ReserveUSD, d.ReserveTokens = nil, nil
	}
	return d
}

// Describe says in words what the limit's budget is and how much of it was spent.
func (l BudgetLimit) Describe() string {
	var parts []string
	if c := l.Budget.MaxCostUSD; c != nil {
		parts = append(parts, fmt.Sprintf("%s spent %s of %s", l.Scope, contract.USD(l.Spend.CostUSD), contract.USD(*c)))
	}
	if m := l.Budget.MaxTokens; m != nil {
		parts = append(parts, fmt.Sprintf("%s used %d of %d tokens", l.Scope, l.Spend.Tokens, *m))
	}
	return strings.Join(parts, "; ")
}

// BudgetLimits reads, in tx, the caps on an attempt of t by agent and what was spent
// against each. A goal with a budget has its row locked, so that attempts under it
// decide one after another (on PostgreSQL as on SQLite) and none reserves what
// another just took; goals without one are only read, so their tasks' attempts do not
// queue behind each other. The task's row is locked by the caller.
func (s *AttemptService) BudgetLimits(ctx context.Context, tx Tx, t *Task, agent *Agent) ([]BudgetLimit, error) {
	var limits []BudgetLimit
	if t.GoalID != nil {
		g, err := tx.GetGoal(ctx, *t.GoalID)
		if err == nil && !g.Budget.IsZero() {
			g, err = tx.LockGoal(ctx, *t.GoalID) // read again under the lock
		}
		if err != nil {
			return nil, err
		}
		if !g.Budget.IsZero() {
			of := SpendScope{GoalID: g.ID}
			sp, err := tx.SpendOf(ctx, of)
			if err != nil {
				return nil, err
			}
			limits = append(limits, BudgetLimit{Scope: fmt.Sprintf("goal %d", g.ID), Of: of, Budget: *g.Budget, Spend: sp})
		}
	}
	if b := t.Contract.Budget; !b.IsZero() {
		of := SpendScope{TaskID: t.ID}
		sp, err := tx.SpendOf(ctx, of)
		if err != nil {
			return nil, err
		}
		limits = append(limits, BudgetLimit{Scope: fmt.Sprintf("task %d", t.ID), Of: of, Budget: *b, Spend: sp})
	}
	if b := agent.DailyBudget; !b.IsZero() {
		of := SpendScope{AgentID: agent.ID, Since: s.now().UTC().Truncate(24 * time.Hour)}
		sp, err := tx.SpendOf(ctx, of)
		if err != nil {
			return nil, err
		}
		limits = append(limits, BudgetLimit{Scope: fmt.Sprintf("agent %s today", agent.Name), Of: of, Budget: *b, Spend: sp})
	}
	return limits, nil
}

// BlockOnBudget blocks t, in progress under the runner's lease, because limit is
// spent: no worker starts, no attempt is used, nothing goes to the ledger. The inbox
// item says which budget; raising it (RaiseBudget) resumes the task.
func (s *AttemptService) BlockOnBudget(ctx context.Context, tx Tx, runner *Agent, t *Task, limit BudgetLimit) error {
	msg := "budget spent: " + limit.Describe()
	return s.blockBeforeAttempt(ctx, tx, runner, t, StageBudget, msg,
		fmt.Sprintf("Task %d stopped, no worker was started: %s. Raise the budget to resume it.", t.ID, limit.Describe()), []string{msg})
}

// RaiseTaskBudget sets task id's budget, by a lead or exec (the contract's checks do
// not change: a budget is money, not what was delegated), and resumes the task when a
// budget had stopped it: a retry without guidance. The change is a task.budget event.
func (s *TaskService) RaiseTaskBudget(ctx context.Context, actor *Agent, id int64, b contract.Budget) (*Task, error) {
	if err := requireAny(actor, "lead_or_exec", RoleLead, RoleExec); err != nil {
		return nil, err
	}
	if msg := b.Problem(); msg != "" || b.IsZero() {
		if msg == "" {
			msg = "give max_cost_usd or max_tokens"
		}
		return nil, &Error{Code: EINVALID, Message: "invalid budget", Fields: map[string]string{"budget": msg}}
	}
	var out *Task
	err := s.store.InTx(ctx, func(tx Tx) error {
		t, err := tx.LockTask(ctx, id)
		if err != nil {
			return err
		}
		before := t.Contract.Budget
		t.Contract.Budget = &b
		if err := tx.UpdateTask(ctx, t); err != nil {
			return err
		}
		if err := s.emit(ctx, tx, "task.budget", actor, &t.ID, t.GoalID, map[string]any{"before": before, "after": b}); err != nil {
			return err
		}
		out = t
		return s.resumeBudgetStopped(ctx, tx, actor, t)
	})
	return out, err
}

// SetGoalBudget sets goal id's budget, by a lead, and resumes its tasks a budget had
// stopped. A nil budget removes the cap. The change is a goal.budget event.
func (s *GoalService) SetGoalBudget(ctx context.Context, actor *Agent, id int64, b *contract.Budget) (*Goal, error) {
	if err := requireAny(actor, "lead_only", RoleLead); err != nil {
		return nil, err
	}
	if msg := b.Problem(); msg != "" {
		return nil, &Error{Code: EINVALID, Message: "invalid budget", Fields: map[string]string{"budget": msg}}
	}
	if b.IsZero() {
		b = nil
	}
	var out *Goal
	err := s.store.InTx(ctx, func(tx Tx) error {
		g, err := tx.LockGoal(ctx, id)
		if err != nil {
			return err
		}
		before := g.Budget
		g.Budget = b
		if err := tx.UpdateGoal(ctx, g); err != nil {
			return err
		}
		if err := s.emit(ctx, tx, "goal.budget", actor, nil, &g.ID, map[string]any{"before": before, "after": b}); err != nil {
			return err
		}
		out = g
		blocked, err := tx.ListTasks(ctx, TaskFilter{GoalID: id, State: TaskBlocked, Limit: 1000})
		if err != nil {
			return err
		}
		for i := range blocked {
			t, err := tx.LockTask(ctx, blocked[i].ID)
			if err != nil {
				return err
			}
			if err := s.tasks.resumeBudgetStopped(ctx, tx, actor, t); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// resumeBudgetStopped retries t, without guidance, when it is blocked because a
// budget stopped it (its open blocked item's last entry is at stage budget).
func (s *TaskService) resumeBudgetStopped(ctx context.Context, tx Tx, actor *Agent, t *Task) error {
	if t.State != TaskBlocked {
		return nil
	}
	stopped, err := blockedAt(ctx, tx, t.ID, StageBudget)
	if err != nil || !stopped {
		return err
	}
	return s.Apply(ctx, tx, actor, t, ActRetry, ActionInput{Reason: "budget raised"})
}

// BudgetWarnAt is the share of a cost cap whose crossing warns people (80 %).
const BudgetWarnAt = 0.8

// EventBudgetWarning records a budget whose spend crossed BudgetWarnAt.
const EventBudgetWarning = "budget.warning"

// WarnBudgets, by the runner in tx right after it recorded an attempt of t that cost
// cost, warns about each cost cap on t the attempt took past BudgetWarnAt: an event
// and an inbox notice (kind budget) saying which budget, how much is left and at what
// rate it is going (the last hour's spend).
func (s *AttemptService) WarnBudgets(ctx context.Context, tx Tx, runner *Agent, t *Task, agent *Agent, cost float64) error {
	if cost <= 0 {
		return nil
	}
	limits, err := s.BudgetLimits(ctx, tx, t, agent)
	if err != nil {
		return err
	}
	for _, l := range limits {
		c := l.Budget.MaxCostUSD
		if c == nil {
			continue
		}
		after := l.Spend.CostUSD
		threshold := *c * BudgetWarnAt
		if after-cost >= threshold || after < threshold {
			continue
		}
		hour := l.Of
		if since := s.now().Add(-time.Hour); hour.Since.Before(since) {
			hour.Since = since
		}
		recent, err := tx.SpendOf(ctx, hour)
		if err != nil {
			return err
		}
		left := max(*c-after, 0)
		title := fmt.Sprintf("Budget warning: %s spent %s of %s (%.0f%%); %s left, at %s an hour",
			l.Scope, contract.USD(after), contract.USD(*c), 100*after / *c, contract.USD(left), contract.USD(recent.CostUSD))
		item := &InboxItem{Kind: InboxBudget, TaskID: t.ID, GoalID: t.GoalID, CreatedAt: s.now(), Title: contract.Truncate(title, 300)}
		if item.Payload, err = json.Marshal(map[string]any{"budget": l.Scope, "spent_usd": after, "cap_usd": *c,
			"left_usd": left, "usd_per_hour": recent.CostUSD}); err != nil {
			return err
		}
		if err := tx.CreateInboxItem(ctx, item); err != nil {
			return err
		}
		if err := s.emit(ctx, tx, EventBudgetWarning, runner, &t.ID, t.GoalID, map[string]any{"inbox_id": item.ID,
			"budget": l.Scope, "spent_usd": after, "cap_usd": *c, "left_usd": left, "usd_per_hour": recent.CostUSD}); err != nil {
			return err
		}
	}
	return nil
}
