package models

import (
	"context"
)

// RulePilotNotVerifier is the rule the pilot of a minion task breaks by verifying it
// (or rejecting its verification, or accepting it blocked): the agent who spawned the
// work may hand it in for review, but someone else confirms it.
const RulePilotNotVerifier = "pilot_not_verifier"

// PilotOf returns the pilot of t: the agent on the task that spawned it (that task's
// builder, or its assignee while it was not started); nil when t was not spawned, or
// nobody is on its pilot task.
func PilotOf(ctx context.Context, tx Tx, t *Task) (*int64, error) {
	if t.SpawnedBy == nil {
		return nil, nil
	}
	p, err := tx.GetTask(ctx, *t.SpawnedBy)
	if ErrorCode(err) == ENOTFOUND {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if p.BuilderID != nil {
		return p.BuilderID, nil
	}
	return p.AssigneeID, nil
}

// isPilot reports whether actor pilots t.
func isPilot(ctx context.Context, tx Tx, actor *Agent, t *Task) (bool, error) {
	if actor == nil || actor.IsRunner() || t.SpawnedBy == nil {
		return false, nil
	}
	p, err := PilotOf(ctx, tx, t)
	return err == nil && p != nil && *p == actor.ID, err
}

// pilotVerifies refuses the pilot of t a verification decision (verify,
// reject-verification, accept): pilot_not_verifier.
func pilotVerifies(ctx context.Context, tx Tx, actor *Agent, t *Task, act Action) error {
	switch act {
	case ActVerify, ActRejectVerification, ActAccept:
	default:
		return nil
	}
	pilot, err := isPilot(ctx, tx, actor, t)
	if err != nil || !pilot {
		return err
	}
	return Forbidden(RulePilotNotVerifier, "the pilot of a minion task (the agent on task %d, which spawned it) may submit it for review but never verify it", *t.SpawnedBy)
}

// spawnCreate checks and sets the spawned_by of a task being created by a. An attempt
// token's task spawns every task created with it: spawned_by is set to it, and naming
// another is attempt_token_scope. Anyone else may name the pilot's task explicitly: it
// must exist.
func spawnCreate(ctx context.Context, tx Tx, a *Agent, t *Task) error {
	if a != nil && a.Scope != nil {
		if t.SpawnedBy != nil && *t.SpawnedBy != a.Scope.TaskID {
			return scopeError("name another task than its own as spawned_by")
		}
		t.SpawnedBy = ptr(a.Scope.TaskID)
		return nil
	}
	if t.SpawnedBy == nil {
		return nil
	}
	if _, err := tx.GetTask(ctx, *t.SpawnedBy); ErrorCode(err) == ENOTFOUND {
		return &Error{Code: EINVALID, Message: "unknown pilot task", Fields: map[string]string{"spawned_by": "no such task"}}
	} else if err != nil {
		return err
	}
	return nil
}

// orRefuse returns err when set (a failed lookup), else the refusal.
func orRefuse(err error, refusal *Error) error {
	if err != nil {
		return err
	}
	return refusal
}
