package models

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/models/contract"
)

// Fingerprint is what a verification covered: the output file and every file the task
// changed against its base, each with a hash of its content, taken by the runner when
// the attempt passed. A recheck hashes the same files in the workspace again: a
// difference means the work is no longer what was verified (drift); a file the task
// never touched is not in it, so changing one is not drift.
type Fingerprint struct {
	// Dir is the workspace the files are in, as the runner saw it. It is the
	// runner's own record and is never shown.
	Dir string `json:"dir"`
	// Git says Files hold git blob ids (the workspace is a git worktree and the
	// files are those the verified commit changed against the task's base); otherwise
	// they hold SHA-256 hex.
	Git   bool              `json:"git,omitempty"`
	Files []FingerprintFile `json:"files"`
	// Output is the output file's path among Files ("" when the contract has none).
	Output string `json:"output,omitempty"`
	// Truncated says a bound left changed files out: only Files are rechecked.
	Truncated bool      `json:"truncated,omitempty"`
	At        time.Time `json:"at"`
}

// FingerprintFile is one file of a Fingerprint: its path relative to the workspace
// (slash-separated) and its hash; an empty Hash records a file the task deleted,
// which must stay absent.
type FingerprintFile struct {
	Path string `json:"path"`
	Hash string `json:"hash"`
}

// Drift is what a recheck found changed in a verified task's work.
type Drift struct {
	At time.Time `json:"at"`
	// Changed are the fingerprinted paths whose content differs (or that appeared or
	// vanished), sorted.
	Changed []string `json:"changed"`
}

// Summary names the changed paths for a person, at most a handful of them.
func (d *Drift) Summary() string {
	const most = 5
	names := d.Changed
	if len(names) > most {
		return strings.Join(names[:most], ", ") + fmt.Sprintf(" and %d more", len(names)-most)
	}
	return strings.Join(names, ", ")
}

// RecordDrift marks the verified task stale because changed (fingerprinted paths)
// differ from what was verified: an event, an inbox item for the lead, and — when its
// goal was verified — the goal back to pending_verify with its goal.verified revoked
// (reason drift). A lead confirms by reopening the task, which revokes its
// task.complete with reason drift. The same drift recorded again changes nothing.
func (s *TaskService) RecordDrift(ctx context.Context, actor *Agent, taskID int64, changed []string) (*Task, error) {
	changed = slices.Sorted(slices.Values(changed))
	if len(changed) == 0 {
		return nil, Errorf(EINVALID, "a drift names what changed")
	}
	var out *Task
	err := s.store.InTx(ctx, func(tx Tx) error {
		t, err := tx.LockTask(ctx, taskID)
		if err != nil {
			return err
		}
		if t.State != TaskVerified {
			return &Error{Code: ECONFLICT, Message: "only a verified task can drift", State: string(t.State)}
		}
		out = t
		if t.Drift != nil && slices.Equal(t.Drift.Changed, changed) {
			return nil
		}
		var g *Goal // locked after the task, as every walk does
		if t.GoalID != nil {
			if g, err = tx.LockGoal(ctx, *t.GoalID); err != nil {
				return err
			}
		}
		first := t.Drift == nil
		t.Drift = &Drift{At: s.now(), Changed: changed}
		if err := tx.UpdateTask(ctx, t); err != nil {
			return err
		}
		if err := s.emit(ctx, tx, "task.stale", actor, &t.ID, t.GoalID, map[string]any{"changed": changed}); err != nil {
			return err
		}
		if first {
			if err := s.driftItem(ctx, tx, actor, t); err != nil {
				return err
			}
		}
		if g == nil || g.State != GoalVerified {
			return nil
		}
		return s.goals.unverifyGoal(ctx, tx, actor, g, fmt.Sprintf("task %d changed after verification: %s", t.ID, t.Drift.Summary()))
	})
	return out, err
}

// ClearDrift marks a stale task fresh again: a recheck found its work as verified
// (someone restored it). Its drift inbox item is resolved; a goal sent back to
// pending_verify stays there for its lead to verify again.
func (s *TaskService) ClearDrift(ctx context.Context, actor *Agent, taskID int64) (*Task, error) {
	var out *Task
	err := s.store.InTx(ctx, func(tx Tx) error {
		t, err := tx.LockTask(ctx, taskID)
		if err != nil {
			return err
		}
		out = t
		if t.Drift == nil {
			return nil
		}
		t.Drift = nil
		if err := tx.UpdateTask(ctx, t); err != nil {
			return err
		}
		if err := s.emit(ctx, tx, "task.fresh", actor, &t.ID, t.GoalID, nil); err != nil {
			return err
		}
		return s.inbox.resolveInbox(ctx, tx, actor, t.ID, InboxDrift, "the work is as verified again")
	})
	return out, err
}

func (s *TaskService) driftItem(ctx context.Context, tx Tx, actor *Agent, t *Task) error {
	item := &InboxItem{Kind: InboxDrift, TaskID: t.ID, GoalID: t.GoalID, CreatedAt: s.now(),
		Title: contract.Truncate(fmt.Sprintf("Task %d changed after it was verified: %s", t.ID, t.Drift.Summary()), 300)}
	if err := tx.CreateInboxItem(ctx, item); err != nil {
		return err
	}
	return s.emit(ctx, tx, "inbox.created", actor, &t.ID, t.GoalID, map[string]any{"inbox_id": item.ID, "kind": item.Kind})
}

// unverifyGoal sends verified goal g (locked in tx) back to pending_verify, revoking
// its goal.verified with reason drift.
func (s *GoalService) unverifyGoal(ctx context.Context, tx Tx, actor *Agent, g *Goal, reason string) error {
	now := s.now()
	if err := s.ledger.revokeGoal(ctx, tx, actor, g, RevokedDrift, reason, now); err != nil {
		return err
	}
	g.State, g.VerifierID, g.VerifiedAt, g.UpdatedAt = GoalPendingVerify, nil, nil, now
	if err := s.moveDeferred(ctx, tx, g, GoalVerified); err != nil {
		return err
	}
	if err := tx.UpdateGoal(ctx, g); err != nil {
		return err
	}
	return s.emit(ctx, tx, "goal.state_changed", actor, nil, &g.ID, map[string]any{"from": GoalVerified, "to": GoalPendingVerify, "reason": reason})
}
