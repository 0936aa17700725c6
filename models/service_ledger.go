package models

import (
	"context"

	"github.com/countersign/countersign/models/contract"
)

// writeTaskComplete puts the task.complete entry in the outbox. hash is the verified
// output's SHA-384; when empty, the newest passed attempt's is used, with its judge's
// report.
func (s *LedgerService) writeTaskComplete(ctx context.Context, tx Tx, t *Task, verifier *Agent, hash string, judge *JudgeReport) error {
	var builder *Agent
	if t.BuilderID != nil {
		b, err := tx.GetAgent(ctx, *t.BuilderID)
		if err != nil {
			return err
		}
		builder = b
	}
	checked := verifier.IsRunner() // the runner verifies only what passed its checks
	if hash == "" {
		attempts, err := tx.ListAttempts(ctx, t.ID)
		if err != nil {
			return err
		}
		for _, a := range attempts {
			if a.Outcome == OutcomePassed && a.OutputHash != "" {
				hash, judge = a.OutputHash, a.Judge
			}
		}
		checked = checked || (len(attempts) > 0 && attempts[len(attempts)-1].Outcome == OutcomePassed)
	}
	e, err := s.composer.TaskComplete(t, builder, verifier, verificationKind(t, checked), hash, judge, s.now())
	if err != nil {
		return err
	}
	return tx.AppendLedgerEntry(ctx, e)
}

// verificationKind says how t's verification goes on the ledger: override when an
// exec accepted it; runner when the runner's checks passed (checked: the runner
// verified, or the task's newest attempt passed) and the contract has checks to run;
// advisory otherwise — a contract without automated checks, or work a person did and
// a person looked at.
func verificationKind(t *Task, checked bool) string {
	switch {
	case t.Override:
		return KindOverride
	case checked && t.Contract.Verification.Type != contract.VerifyAdvisory:
		return KindRunner
	default:
		return KindAdvisory
	}
}
