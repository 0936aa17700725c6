package models

import (
	"context"
	"errors"
)

// MayTake reports whether actor may take act on task t as far as who acts goes: the
// roles each step requires (requireAny, as the steps ask it), the assignee, builder
// and creator the steps name, the approve/verify policy with separation of duties
// (Permitted) and an attempt token's scope. It does not ask whether t's state allows
// act (CheckTransition), nor about the step's inputs, dependencies or a pilot's
// submission, which need the store. builder is t's builder (nil when none) and team
// the number of agents, as Permitted takes them.
//
// The API narrows a refused transition's Allowed to what the caller may take with
// it, and the dashboard offers only these forms; the steps themselves still decide.
func MayTake(actor *Agent, t *Task, act Action, builder *Agent, team int) bool {
	if actor == nil || t == nil || actor.scopeAllowsAction(t, act) != nil {
		return false
	}
	roles := func(rs ...string) bool { return requireAny(actor, "", rs...) == nil }
	is := func(id *int64) bool { return id != nil && *id == actor.ID }
	switch act {
	case ActAssign:
		return actor.IsRunner() || roles(RoleLead, RoleExec)
	case ActReassign, ActRetry:
		return roles(RoleLead, RoleExec)
	case ActAccept:
		return roles(RoleExec) && !is(t.BuilderID) && t.OpenImpossible() == nil
	case ActReopen:
		return roles(RoleLead)
	case ActCancel, ActAmend:
		return actor.ID == t.CreatorID || roles(RoleLead, RoleExec)
	case ActAnswer:
		// A blocked task takes an answer only on its open impossible claim.
		return (actor.ID == t.CreatorID || roles(RoleLead, RoleExec)) && (t.State != TaskBlocked || t.OpenImpossible() != nil)
	case ActStart:
		return actor.IsRunner() || is(t.AssigneeID)
	case ActSubmit:
		return actor.IsRunner() || is(t.BuilderID)
	case ActApprove, ActReject:
		return Permitted(actor, t, DutyApprove, builder, team) == nil
	case ActVerify, ActRejectVerification:
		return Permitted(actor, t, DutyVerify, builder, team) == nil
	case ActBlock, ActAsk:
		return actor.IsRunner()
	}
	return false
}

// ActionsFor narrows actions (names of Actions, as a refused transition's Allowed
// lists them) to those actor may take on t, keeping their order; never nil. Beyond
// MayTake it reads what MayTake cannot see: the pilot of a minion task may submit it,
// and a move the pilot or hat rules would refuse (hatRules, which reads the task's
// history) is left out.
func (s *TaskService) ActionsFor(ctx context.Context, actor *Agent, t *Task, actions []string) ([]string, error) {
	agents, err := s.store.ListAgents(ctx)
	if err != nil {
		return nil, err
	}
	var builder *Agent
	for i := range agents {
		if t.BuilderID != nil && agents[i].ID == *t.BuilderID {
			builder = &agents[i]
		}
	}
	h := &taskHistory{tx: s.store, t: t} // read at most once for all the actions
	out := []string{}
	for _, a := range actions {
		act := Action(a)
		ok := MayTake(actor, t, act, builder, TeamSize(agents))
		if !ok && act == ActSubmit && actor.scopeAllowsAction(t, act) == nil {
			if ok, err = h.IsPilot(ctx, actor); err != nil {
				return nil, err
			}
		}
		if ok {
			if ok, err = s.hatsAllow(ctx, h, actor, t, act); err != nil {
				return nil, err
			}
		}
		if ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// hatsAllow reports whether the pilot and hat rules let actor take act on t; any
// other error is returned.
func (s *TaskService) hatsAllow(ctx context.Context, h *taskHistory, actor *Agent, t *Task, act Action) (bool, error) {
	_, err := hatRulesIn(ctx, s.store, h, actor, t, act)
	if ErrorCode(err) == EFORBIDDEN {
		return false, nil
	}
	return err == nil, err
}

// NarrowConflict returns err with its Allowed narrowed to what actor may take on
// task id (ActionsFor) when err is a refused transition (ECONFLICT with Allowed);
// any other error, or one that cannot be narrowed, is returned as it is.
func (s *TaskService) NarrowConflict(ctx context.Context, actor *Agent, id int64, err error) error {
	var e *Error
	if !errors.As(err, &e) || e.Code != ECONFLICT || e.Allowed == nil {
		return err
	}
	t, gerr := s.store.GetTask(ctx, id)
	if gerr != nil {
		return err
	}
	allowed, aerr := s.ActionsFor(ctx, actor, t, e.Allowed)
	if aerr != nil {
		return err
	}
	narrowed := *e
	narrowed.Allowed = allowed
	return &narrowed
}
