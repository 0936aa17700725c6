package models

import (
	"context"

	"github.com/countersign/countersign/models/contract"
)

// writeTaskComplete puts the task.complete entry in the outbox. hash is the verified
// output's SHA-384; when empty, the newest passed attempt's is used, with its judge's
// report.
func (s *LedgerService) writeTaskComplete(ctx context.Context, tx Tx, t *Task, verifier *Agent, hash string, judge *JudgeReport) error {
	c := Completion{Task: t, Verifier: verifier, OutputHash: hash, Judge: judge, At: s.now()}
	var err error
	if c.Builder, err = optionalAgent(ctx, tx, t.BuilderID); err != nil {
		return err
	}
	if c.Approver, err = optionalAgent(ctx, tx, t.ApproverID); err != nil {
		return err
	}
	attempts, err := tx.ListAttempts(ctx, t.ID)
	if err != nil {
		return err
	}
	for i := range attempts {
		if attempts[i].Outcome == OutcomePassed {
			c.Attempt = &attempts[i]
		}
	}
	checked := verifier.IsRunner() // the runner verifies only what passed its checks
	if hash == "" {
		for _, a := range attempts {
			if a.Outcome == OutcomePassed && a.OutputHash != "" {
				c.OutputHash, c.Judge = a.OutputHash, a.Judge
			}
		}
		checked = checked || (len(attempts) > 0 && attempts[len(attempts)-1].Outcome == OutcomePassed)
	}
	if c.Kind = verificationKind(t, checked); c.Kind == KindOverride {
		c.Attempt = nil // accepted without passing: no attempt's checks stand for it
	}
	e, err := s.composer.TaskComplete(c)
	if err != nil {
		return err
	}
	return tx.AppendLedgerEntry(ctx, e)
}

// optionalAgent reads the agent id names, nil for a nil id.
func optionalAgent(ctx context.Context, tx Tx, id *int64) (*Agent, error) {
	if id == nil {
		return nil, nil
	}
	return tx.GetAgent(ctx, *id)
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
