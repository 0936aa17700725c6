package models

import (
	"context"
	"slices"
)

// hatEventsLimit bounds the events a hat check reads of one task: far more than a
// task's transitions, which are what record hats.
const hatEventsLimit = 5000

// Wearing is the hat one move put on and who wears it, recorded in the move's event
// (see EventHat); zero when the move puts none on.
type Wearing struct {
	Hat    string
	Wearer int64
	record bool
}

// addTo records the hat in an event's data.
func (w Wearing) addTo(data map[string]any) {
	if w.record && w.Hat != "" {
		data["hat"], data["wearer_id"] = w.Hat, w.Wearer
	}
}

// moveHat says which hat a move of t by actor puts on, and on whom, once the move's
// step ran (so a start has set the builder). The runner wears no hat; for a start it
// takes, the builder does. Assigning checks the assignee as the builder to be,
// without recording it: the hat is put on at the start.
func moveHat(actor *Agent, t *Task, act Action) Wearing {
	switch act {
	case ActStart:
		if t.BuilderID != nil {
			return Wearing{Hat: HatBuilder, Wearer: *t.BuilderID, record: true}
		}
	case ActAssign, ActReassign:
		if t.AssigneeID != nil {
			return Wearing{Hat: HatBuilder, Wearer: *t.AssigneeID}
		}
	}
	if actor == nil || actor.IsRunner() || actor.ID == 0 {
		return Wearing{}
	}
	switch act {
	case ActSubmit:
		if t.BuilderID != nil && *t.BuilderID == actor.ID {
			return Wearing{Hat: HatBuilder, Wearer: actor.ID, record: true}
		}
		return Wearing{Hat: HatPilot, Wearer: actor.ID, record: true} // stepSubmit let only the pilot through
	case ActApprove, ActReject:
		return Wearing{Hat: HatReviewer, Wearer: actor.ID, record: true}
	case ActVerify, ActRejectVerification, ActAccept:
		return Wearing{Hat: HatTester, Wearer: actor.ID, record: true}
	}
	return Wearing{}
}

// hatRules applies the per-task rules of who may wear what to one move of t, after
// its step (and so the separation of duties) allowed it: the minion-pilot rules
// (pilotRules: approver_not_submitter, pilot_not_verifier), and nobody wears two hats of the project's hat table that
// conflict (hat_conflict), counting every hat they wore on the task before, the one
// the move puts on and the hats their roles declare (RoleHats). It returns the hat the
// move puts on, for its event.
func hatRules(ctx context.Context, tx Tx, actor *Agent, t *Task, act Action) (Wearing, error) {
	return hatRulesIn(ctx, tx, &taskHistory{tx: tx, t: t}, actor, t, act)
}

// hatRulesIn is hatRules reading t's history through h, which pilotRules and the hat
// check share, as may several checks of one unchanged task (ActionsFor).
func hatRulesIn(ctx context.Context, tx Tx, h *taskHistory, actor *Agent, t *Task, act Action) (Wearing, error) {
	if err := pilotRules(ctx, tx, h, actor, t, act); err != nil {
		return Wearing{}, err
	}
	w := moveHat(actor, t, act)
	if w.Hat == "" {
		return w, nil
	}
	rules, err := RulesIn(ctx, tx)
	if err != nil {
		return Wearing{}, err
	}
	table := rules.HatTable()
	var wearer *Agent // loaded only when needed (role hats, a refusal): the runner's claims start tasks
	load := func() error {
		if wearer != nil {
			return nil
		}
		if actor != nil && actor.ID == w.Wearer {
			wearer = actor
			return nil
		}
		wearer, err = tx.GetAgent(ctx, w.Wearer)
		return err
	}
	putOn := []string{w.Hat}
	if declaresRoleHats(table) {
		if err := load(); err != nil {
			return Wearing{}, err
		}
		putOn = append(putOn, RoleHats(table, wearer)...)
	}
	if !anyConflicts(table, putOn) {
		return w, nil // nothing it puts on can conflict: no need to read the history
	}
	events, err := h.Events(ctx)
	if err != nil {
		return Wearing{}, err
	}
	pilot, err := h.Pilot(ctx)
	if err != nil {
		return Wearing{}, err
	}
	worn := WornOn(t, events, pilot)[w.Wearer]
	if a, b, bad := HatConflictIn(table, worn, putOn); bad {
		if err := load(); err != nil {
			return Wearing{}, err
		}
		return Wearing{}, Forbidden(RuleHatConflict, "on task %d, %s would wear both the %s and the %s hat, which the project's hats say conflict",
			t.ID, wearer.Name, quote(a), quote(b))
	}
	return w, nil
}

// declaresRoleHats reports whether the table declares a hat other than the part hats.
func declaresRoleHats(table []Hat) bool {
	for _, h := range table {
		if !slices.Contains(PartHats, h.Name) {
			return true
		}
	}
	return false
}

// anyConflicts reports whether any of hats has a conflict in the table.
func anyConflicts(table []Hat, hats []string) bool {
	for _, h := range hats {
		if hasConflicts(table, h) {
			return true
		}
	}
	return false
}
