package models

import (
	"context"
	"time"
)

// standingEntry returns the newest entry of type typ about the task (taskID) or goal
// (goalID) that no later revocation withdrew, or nil when there is none: what a
// revocation withdraws.
func standingEntry(ctx context.Context, tx ledgerLister, f LedgerFilter, typ, revokedType string) (*LedgerEntry, error) {
	f.Limit, f.Types = 1000, []string{typ, revokedType}
	var standing *LedgerEntry
	for {
		page, err := tx.ListLedger(ctx, f)
		if err != nil {
			return nil, err
		}
		for i := range page {
			switch page[i].Type {
			case typ:
				standing = &page[i]
			case revokedType:
				standing = nil
			}
		}
		if len(page) < f.Limit {
			return standing, nil
		}
		f.AfterID = page[len(page)-1].ID
	}
}

// ledgerLister lists ledger entries: a Store or a Tx.
type ledgerLister interface {
	ListLedger(ctx context.Context, f LedgerFilter) ([]LedgerEntry, error)
}

// StandingCompletion returns task taskID's task.complete that no revocation
// withdrew, nil when it has none.
func (s *LedgerService) StandingCompletion(ctx context.Context, taskID int64) (*LedgerEntry, error) {
	return standingEntry(ctx, s.store, LedgerFilter{TaskID: taskID}, LedgerTaskComplete, LedgerTaskRevoked)
}

// revokeTask writes a task.revoked withdrawing t's standing task.complete, if it has
// one (a task verified before the ledger kept it has none).
func (s *LedgerService) revokeTask(ctx context.Context, tx Tx, actor *Agent, t *Task, why, reason string) error {
	e, err := standingEntry(ctx, tx, LedgerFilter{TaskID: t.ID}, LedgerTaskComplete, LedgerTaskRevoked)
	if err != nil || e == nil {
		return err
	}
	r, err := s.composer.TaskRevoked(t, e, actor, why, reason, s.now())
	if err != nil {
		return err
	}
	return tx.AppendLedgerEntry(ctx, r)
}

// revokeGoal writes a goal.revoked withdrawing g's standing goal.verified, if any.
func (s *LedgerService) revokeGoal(ctx context.Context, tx Tx, actor *Agent, g *Goal, why, reason string, at time.Time) error {
	e, err := standingEntry(ctx, tx, LedgerFilter{GoalID: g.ID}, LedgerGoalVerified, LedgerGoalRevoked)
	if err != nil || e == nil {
		return err
	}
	r, err := s.composer.GoalRevoked(g, e, actor, why, reason, at)
	if err != nil {
		return err
	}
	return tx.AppendLedgerEntry(ctx, r)
}

// TaskAttestation returns task taskID's newest task.complete that carries an
// attestation, and whether it is revoked: a later task.revoked withdrew it (the task
// was reopened or drifted), or a later completion replaced it. ENOTFOUND when the task
// has none.
func (s *LedgerService) TaskAttestation(ctx context.Context, taskID int64) (*LedgerEntry, bool, error) {
	f := LedgerFilter{TaskID: taskID, Limit: 1000, Types: []string{LedgerTaskComplete}}
	var newest *LedgerEntry
	for {
		page, err := s.store.ListLedger(ctx, f)
		if err != nil {
			return nil, false, err
		}
		for i := range page {
			if len(page[i].Attestation) > 0 {
				newest = &page[i]
			}
		}
		if len(page) < f.Limit {
			break
		}
		f.AfterID = page[len(page)-1].ID
	}
	if newest == nil {
		return nil, false, Errorf(ENOTFOUND, "task %d has no attestation: it was not verified with a signing key, or it left nothing to attest (no commit, no deliverable)", taskID)
	}
	standing, err := s.StandingCompletion(ctx, taskID)
	if err != nil {
		return nil, false, err
	}
	return newest, standing == nil || standing.ID != newest.ID, nil
}
