package models

import (
	"context"
	"slices"
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

// taskHistory reads a task's events (the last hatEventsLimit) and its pilot (PilotOf)
// at most once for the rule checks of one move, and only when a check needs them.
type taskHistory struct {
	tx                    Tx
	t                     *Task
	events                []Event
	pilot                 *int64
	haveEvents, havePilot bool
}

// Events returns the task's events, reading them on the first call.
func (h *taskHistory) Events(ctx context.Context) ([]Event, error) {
	if !h.haveEvents {
		events, err := h.tx.ListTaskEvents(ctx, h.t.ID, hatEventsLimit)
		if err != nil {
			return nil, err
		}
		h.events, h.haveEvents = events, true
	}
	return h.events, nil
}

// Pilot returns the task's pilot, reading it on the first call.
func (h *taskHistory) Pilot(ctx context.Context) (*int64, error) {
	if !h.havePilot {
		p, err := PilotOf(ctx, h.tx, h.t)
		if err != nil {
			return nil, err
		}
		h.pilot, h.havePilot = p, true
	}
	return h.pilot, nil
}

// isPilot reports whether actor pilots t.
func isPilot(ctx context.Context, tx Tx, actor *Agent, t *Task) (bool, error) {
	return (&taskHistory{tx: tx, t: t}).IsPilot(ctx, actor)
}

// IsPilot reports whether actor pilots the task.
func (h *taskHistory) IsPilot(ctx context.Context, actor *Agent) (bool, error) {
	if actor == nil || actor.IsRunner() || h.t.SpawnedBy == nil {
		return false, nil
	}
	p, err := h.Pilot(ctx)
	return err == nil && p != nil && *p == actor.ID, err
}

// RuleApproverNotSubmitter is the rule broken by approving a minion task one handed
// in for review in its builder's stead (submitted wearing the pilot hat): the pilot
// may submit the work, but someone else lets it through review.
const RuleApproverNotSubmitter = "approver_not_submitter"

// RuleSpawnedByNotPilot is the rule broken by naming, without an attempt token, a
// spawning task one is not on: naming it makes that task's agent the pilot, who may
// submit the new task and may not verify it, so only that agent or a lead may.
const RuleSpawnedByNotPilot = "spawned_by_not_pilot"

// pilotRules applies the minion-pilot rules to one move of t by actor, reading the
// task's history when t was spawned and the move is a review or verification
// decision:
//
//   - approve: whoever submitted t wearing the pilot hat, at any point of its
//     history, may not approve it (approver_not_submitter);
//   - verify, reject-verification, accept: the current pilot, and anyone who wore the
//     pilot hat on t before (a former pilot, after the spawning task was reassigned),
//     may not (pilot_not_verifier).
//
// The runner wears no hat and is never refused here.
func pilotRules(ctx context.Context, tx Tx, h *taskHistory, actor *Agent, t *Task, act Action) error {
	if actor == nil || actor.IsRunner() || t.SpawnedBy == nil {
		return nil
	}
	switch act {
	case ActApprove, ActVerify, ActRejectVerification, ActAccept:
	default:
		return nil
	}
	events, err := h.Events(ctx)
	if err != nil {
		return err
	}
	if act == ActApprove {
		if submittedAsPilot(events, actor.ID) {
			return Forbidden(RuleApproverNotSubmitter, "whoever submitted a minion task for review as its pilot may not also approve it: someone else reviews it")
		}
		return nil
	}
	pilot, err := h.Pilot(ctx)
	if err != nil {
		return err
	}
	refusal := Forbidden(RulePilotNotVerifier, "the pilot of a minion task (the agent on task %d, which spawned it, now or before) may submit it for review but never verify it", *t.SpawnedBy)
	if slices.Contains(WornOn(t, events, pilot)[actor.ID], HatPilot) {
		return refusal
	}
	former, err := builtSpawningTask(ctx, tx, *t.SpawnedBy, actor.ID)
	if err != nil {
		return err
	}
	if former {
		return refusal
	}
	return nil
}

// builtSpawningTask reports whether agent id wore the builder hat on the spawning
// task at any point of its history: a former pilot, who may have left the minion task
// alone (so wore no hat on it) and still may not verify what its own task spawned.
func builtSpawningTask(ctx context.Context, tx Tx, spawning, id int64) (bool, error) {
	events, err := tx.ListTaskEvents(ctx, spawning, hatEventsLimit)
	if err != nil {
		return false, err
	}
	for _, e := range events {
		if hat, who, ok := EventHat(e); ok && hat == HatBuilder && who == id {
			return true, nil
		}
	}
	return false, nil
}

// submittedAsPilot reports whether one of a task's events is a submission by id
// wearing the pilot hat.
func submittedAsPilot(events []Event, id int64) bool {
	for _, e := range events {
		if hat, who, ok := EventHat(e); ok && e.Type == "task.submitted" && hat == HatPilot && who == id {
			return true
		}
	}
	return false
}

// spawnCreate checks and sets the spawned_by of a task being created by a. An attempt
// token's task spawns every task created with it: spawned_by is set to it, and naming
// another is attempt_token_scope. Without a token, the pilot's task named must exist
// (422 spawned_by), and the creator must be on it (its builder or assignee) or a lead
// (spawned_by_not_pilot): naming it chooses who pilots the new task, and so who may
// submit it and who may not verify it. The runner and internal callers (nil) may name
// any.
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
	p, err := tx.GetTask(ctx, *t.SpawnedBy)
	if ErrorCode(err) == ENOTFOUND {
		return &Error{Code: EINVALID, Message: "unknown pilot task", Fields: map[string]string{"spawned_by": "no such task"}}
	}
	if err != nil {
		return err
	}
	if a == nil || a.IsRunner() || a.HasRole(RoleLead) || isOn(a.ID, p.BuilderID) || isOn(a.ID, p.AssigneeID) {
		return nil
	}
	return Forbidden(RuleSpawnedByNotPilot, "only the agent on task %d (its builder or assignee) or a lead may name it as spawned_by", p.ID)
}

// isOn reports whether id is the agent in slot (a task's builder or assignee).
func isOn(id int64, slot *int64) bool { return slot != nil && *slot == id }

// orRefuse returns err when set (a failed lookup), else the refusal.
func orRefuse(err error, refusal *Error) error {
	if err != nil {
		return err
	}
	return refusal
}
