package models

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxInboxNote bounds the note a person leaves when dismissing an inbox item.
const maxInboxNote = 2000

// CanResolveInbox reports whether a may dismiss advisory inbox items: the inbox is the
// exec's and the lead's, so only they may. ResolveInboxItem enforces the same rule;
// the pages use this to decide whether to show the button.
func CanResolveInbox(a *Agent) bool {
	return requireAny(a, "lead_or_exec", RoleLead, RoleExec) == nil
}

// ResolveInboxItem dismisses an open advisory inbox item: the person has looked at the
// advisory output and nothing more is to be done about it (or an agent_paused item,
// read and acted on). Only a lead or an exec may
// (EFORBIDDEN, rule lead_or_exec). Only advisory items can be dismissed this way:
// blocked items and escalations wait for a decision on their task, and are resolved by
// the task's retry, reassign, accept or cancel actions (ECONFLICT). An item already
// resolved is ECONFLICT too, so that two people dismissing the same item at once do
// not both succeed. The item records who resolved it, when, and the note; the
// inbox.resolved event is written in the same transaction. It returns the resolved
// item.
func (s *InboxService) ResolveInboxItem(ctx context.Context, actor *Agent, itemID int64, note string) (*InboxItem, error) {
	if err := requireAny(actor, "lead_or_exec", RoleLead, RoleExec); err != nil {
		return nil, err
	}
	note = strings.TrimSpace(note)
	if utf8.RuneCountInString(note) > maxInboxNote {
		return nil, &Error{Code: EINVALID, Message: "the note is too long",
			Fields: map[string]string{"note": "must be at most 2000 characters"}}
	}
	var out *InboxItem
	err := s.store.InTx(ctx, func(tx Tx) error {
		it, err := tx.GetInboxItem(ctx, itemID)
		if err != nil {
			return err
		}
		// The task's lock orders this with the task actions that resolve its items
		// (and with a concurrent dismissal on PostgreSQL); the item is read again
		// under it, so that only one of two concurrent resolutions succeeds.
		if _, err := tx.LockTask(ctx, it.TaskID); err != nil {
			return err
		}
		if it, err = tx.GetInboxItem(ctx, itemID); err != nil {
			return err
		}
		if it.Kind != InboxAdvisory && it.Kind != InboxAgentPaused && it.Kind != InboxBudget {
			return &Error{Code: ECONFLICT, State: it.Kind, Message: inboxKindConflict(it)}
		}
		if it.Resolved {
			return &Error{Code: ECONFLICT, State: "resolved",
				Message: fmt.Sprintf("inbox item %d is already resolved (%s)", it.ID, it.Resolution)}
		}
		resolution := "dismissed"
		if note != "" {
			resolution += ": " + note
		}
		now := s.now()
		it.Resolved, it.Resolution, it.ResolvedAt = true, resolution, &now
		if actor.ID != 0 {
			it.ResolvedBy = &actor.ID
		}
		if err := tx.UpdateInboxItem(ctx, it); err != nil {
			return err
		}
		out = it
		return s.emit(ctx, tx, "inbox.resolved", actor, &it.TaskID, it.GoalID,
			map[string]any{"inbox_id": it.ID, "kind": it.Kind, "resolution": resolution})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// inboxKindConflict says how an item that cannot be dismissed is resolved instead.
func inboxKindConflict(it *InboxItem) string {
	return fmt.Sprintf("inbox item %d is %s: only advisory items and paused-agent notices can be dismissed; "+
		"it is resolved by an action on its task %d (retry, reassign, accept or cancel)", it.ID, it.Kind, it.TaskID)
}

// resolveInbox closes the open inbox items of a task (of one kind, or all when kind is
// empty) with a resolution.
func (s *InboxService) resolveInbox(ctx context.Context, tx Tx, actor *Agent, taskID int64, kind, resolution string) error {
	items, err := tx.ListInbox(ctx, InboxFilter{TaskID: taskID, Kind: kind})
	if err != nil {
		return err
	}
	now := s.now()
	for i := range items {
		it := &items[i]
		it.Resolved, it.Resolution, it.ResolvedAt = true, resolution, &now
		if actor != nil && actor.ID != 0 {
			it.ResolvedBy = &actor.ID
		}
		if err := tx.UpdateInboxItem(ctx, it); err != nil {
			return err
		}
		if err := s.emit(ctx, tx, "inbox.resolved", actor, &taskID, it.GoalID, map[string]any{"inbox_id": it.ID, "resolution": resolution}); err != nil {
			return err
		}
	}
	return nil
}
