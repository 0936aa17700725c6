package models

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// CreateGoal creates a goal in state open. Any agent may create one.
func (s *GoalService) CreateGoal(ctx context.Context, actor *Agent, g *Goal) error {
	if err := actor.Unscoped("create a goal"); err != nil {
		return err
	}
	if err := g.Validate(); err != nil {
		return err
	}
	now := s.now()
	g.State, g.CreatorID, g.CreatedAt, g.UpdatedAt = GoalOpen, actor.ID, now, now
	g.VerifierID, g.VerifiedAt, g.Notes = nil, nil, ""
	return s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.CreateGoal(ctx, g); err != nil {
			return err
		}
		return s.emit(ctx, tx, "goal.created", actor, nil, &g.ID, map[string]any{"title": g.Title})
	})
}

// GoalStatus returns a goal, its tasks and the number of tasks per state.
func (s *GoalService) GoalStatus(ctx context.Context, id int64) (*GoalStatus, error) {
	g, err := s.store.GetGoal(ctx, id)
	if err != nil {
		return nil, err
	}
	counts, err := s.store.CountTasks(ctx, id)
	if err != nil {
		return nil, err
	}
	tasks, err := s.store.ListTasks(ctx, TaskFilter{GoalID: id, Limit: 1000})
	if err != nil {
		return nil, err
	}
	for _, st := range TaskStates {
		if _, ok := counts[st]; !ok {
			counts[st] = 0
		}
	}
	spend, err := s.store.SpendOf(ctx, SpendScope{GoalID: id})
	if err != nil {
		return nil, err
	}
	return &GoalStatus{Goal: *g, Counts: counts, Tasks: tasks, Spend: spend}, nil
}

// VerifyGoal records the lead's confirmation that the integrated result works. Only a
// lead may verify a goal, only for themself (it cannot be delegated), with notes, and
// only once every task is verified or cancelled (state pending_verify).
func (s *GoalService) VerifyGoal(ctx context.Context, actor *Agent, id int64, notes string) (*Goal, error) {
	if err := requireLead(actor); err != nil {
		return nil, err
	}
	notes = strings.TrimSpace(notes)
	if notes == "" {
		return nil, &Error{Code: EINVALID, Message: "goal verification needs notes on the integration test", Fields: map[string]string{"notes": "must not be empty"}}
	}
	var out *Goal
	err := s.store.InTx(ctx, func(tx Tx) error {
		g, err := tx.LockGoal(ctx, id)
		if err != nil {
			return err
		}
		if g.State != GoalPendingVerify {
			return goalConflict(g, "verify")
		}
		if !g.Deferred.Passed() {
			return &Error{Code: ECONFLICT, State: string(g.State),
				Message: "the goal's deferred checks have not passed (" + g.Deferred.Status + "): they run on the integrated result before the goal can be verified"}
		}
		counts, err := tx.CountTasks(ctx, id)
		if err != nil {
			return err
		}
		now := s.now()
		g.State, g.VerifierID, g.Notes, g.VerifiedAt, g.UpdatedAt = GoalVerified, &actor.ID, notes, &now, now
		if err := tx.UpdateGoal(ctx, g); err != nil {
			return err
		}
		e, err := s.composer.GoalVerified(g, actor, counts, now)
		if err != nil {
			return err
		}
		if err := tx.AppendLedgerEntry(ctx, e); err != nil {
			return err
		}
		out = g
		return s.emit(ctx, tx, "goal.verified", actor, nil, &g.ID, map[string]any{"from": GoalPendingVerify, "to": GoalVerified, "notes": notes})
	})
	return out, err
}

func goalConflict(g *Goal, action string) error {
	allowed := []string{}
	if g.State == GoalPendingVerify {
		allowed = []string{"verify", "reject"}
	}
	return &Error{Code: ECONFLICT, Message: fmt.Sprintf("cannot %s a goal that is %s", action, g.State), State: string(g.State), Allowed: allowed}
}

// RejectGoal sends a goal waiting for verification back to active with the lead's
// reason and the fix tasks that address it. Tasks already verified stay verified.
func (s *GoalService) RejectGoal(ctx context.Context, actor *Agent, id int64, reason string, fixes []TaskSpec) (*GoalStatus, error) {
	if err := requireLead(actor); err != nil {
		return nil, err
	}
	var fe FieldErrors
	reason = strings.TrimSpace(reason)
	if reason == "" {
		fe.Add("reason", "must not be empty")
	}
	if len(fixes) == 0 {
		fe.Add("fix_tasks", "at least one fix task is required: the goal goes back to active to do it")
	}
	if err := fe.Err(); err != nil {
		return nil, err
	}
	for i := range fixes {
		if err := requireCommandAuthority(actor, fixes[i].Contract, fmt.Sprintf("fix_tasks[%d].contract", i)); err != nil {
			return nil, err
		}
	}
	rules, err := s.templates.Rules(ctx)
	if err != nil {
		return nil, err
	}
	tasks := make([]*Task, len(fixes))
	for i := range fixes {
		fixes[i].GoalID = &id
		t, err := fixes[i].build(rules, s.now())
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || len(e.Fields) == 0 {
				return nil, err
			}
			var fe2 FieldErrors
			fe2.Merge(fmt.Sprintf("fix_tasks[%d]", i), FieldErrors(e.Fields))
			return nil, fe2.Err()
		}
		tasks[i] = t
	}
	err = s.store.InTx(ctx, func(tx Tx) error {
		g, err := tx.LockGoal(ctx, id)
		if err != nil {
			return err
		}
		if g.State != GoalPendingVerify {
			return goalConflict(g, "reject")
		}
		g.State, g.Deferred, g.UpdatedAt = GoalActive, nil, s.now()
		if err := tx.UpdateGoal(ctx, g); err != nil {
			return err
		}
		ids := []int64{}
		for i, t := range tasks {
			if err := s.tasks.insertTask(ctx, tx, actor, t, fixes[i].Assignee); err != nil {
				return err
			}
			ids = append(ids, t.ID)
		}
		return s.emit(ctx, tx, "goal.rejected", actor, nil, &g.ID, map[string]any{"from": GoalPendingVerify, "to": GoalActive, "reason": reason, "fix_tasks": ids})
	})
	if err != nil {
		return nil, err
	}
	return s.GoalStatus(ctx, id)
}

// LinkTaskToGoal moves a task into a goal (out of the one it was in, if any).
func (s *GoalService) LinkTaskToGoal(ctx context.Context, actor *Agent, taskID, goalID int64) (*Task, error) {
	if err := actor.Unscoped("move a task to a goal"); err != nil {
		return nil, err
	}
	var out *Task
	err := s.store.InTx(ctx, func(tx Tx) error {
		t, err := tx.LockTask(ctx, taskID)
		if err != nil {
			return err
		}
		if actor.ID != t.CreatorID {
			if err := requireAny(actor, "lead_exec_or_creator", RoleLead, RoleExec); err != nil {
				return err
			}
		}
		if t.GoalID != nil && *t.GoalID != goalID {
			if _, err := tx.LockGoal(ctx, *t.GoalID); err != nil {
				return err
			}
		}
		g, err := tx.LockGoal(ctx, goalID)
		if err != nil {
			return err
		}
		if g.State == GoalVerified {
			return &Error{Code: ECONFLICT, Message: "goal is verified; reopen a task or create a new goal", State: string(g.State)}
		}
		old := t.GoalID
		t.GoalID, t.UpdatedAt = &goalID, s.now()
		if err := tx.UpdateTask(ctx, t); err != nil {
			return err
		}
		if err := s.emit(ctx, tx, "task.linked", actor, &t.ID, &goalID, map[string]any{"goal_id": goalID}); err != nil {
			return err
		}
		if old != nil && *old != goalID {
			if err := s.syncGoal(ctx, tx, actor, *old, ""); err != nil {
				return err
			}
		}
		out = t
		return s.syncGoal(ctx, tx, actor, goalID, "")
	})
	return out, err
}

// syncGoal moves a goal along automatically after one of its tasks changed. reopened,
// when set, says why a verified task was reopened: that makes a verified goal active
// again and withdraws its goal.verified.
func (s *GoalService) syncGoal(ctx context.Context, tx Tx, actor *Agent, goalID int64, reopened string) error {
	g, err := tx.LockGoal(ctx, goalID)
	if err != nil {
		return err
	}
	counts, err := tx.CountTasks(ctx, goalID)
	if err != nil {
		return err
	}
	from := g.State
	next := NextGoalState(g.State, counts)
	if reopened != "" && g.State == GoalVerified {
		next = GoalActive
		g.VerifierID, g.VerifiedAt = nil, nil
		if err := s.ledger.revokeGoal(ctx, tx, actor, g, RevokedReopened, reopened, s.now()); err != nil {
			return err
		}
	}
	if next == from {
		return nil
	}
	g.State, g.UpdatedAt = next, s.now()
	if err := s.moveDeferred(ctx, tx, g, from); err != nil {
		return err
	}
	if err := tx.UpdateGoal(ctx, g); err != nil {
		return err
	}
	typ := "goal.state_changed"
	if reopened != "" && from == GoalVerified {
		typ = "goal.reopened"
	}
	return s.emit(ctx, tx, typ, actor, nil, &g.ID, map[string]any{"from": from, "to": next})
}
