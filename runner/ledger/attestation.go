package ledger

import (
	"context"
	"errors"
	"strings"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/attest"
)

// attestation signs c's attestation, returning the envelope's JSON and the
// statement's digest for the message; nothing (and no error) when the composer has no
// signer or the completion has no subject: no commit and no deliverable (an advisory
// task's words, a task without a workspace of its own).
func (k Composer) attestation(c models.Completion, tc TaskComplete) (envelope []byte, digest string, err error) {
	if k.Signer == nil {
		return nil, "", nil
	}
	subjects := completionSubjects(c, tc.Tree)
	if len(subjects) == 0 {
		return nil, "", nil
	}
	statement, err := attest.Statement(subjects, completionPredicate(c, tc, k.Ledger))
	if errors.Is(err, attest.ErrNoSubject) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	// Signing is local arithmetic with the key in memory: nothing to cancel.
	envelope, err = k.Signer.Sign(context.Background(), statement)
	if err != nil {
		return nil, "", err
	}
	return envelope, attest.StatementDigest(statement), nil
}

// completionSubjects is what c's attestation is about: its landed commit (and the
// judged tree), else its deliverable's files. A SHA-256 repository's 64-digit ids are
// not what the in-toto bindings accept as gitCommit, so such a commit is not attested.
func completionSubjects(c models.Completion, tree string) []attest.Subject {
	if commit := c.Task.Commit; len(commit) == 40 {
		if len(tree) != 40 {
			tree = ""
		}
		name := c.Task.Branch
		if name == "" {
			name = "commit"
		}
		return []attest.Subject{attest.CommitSubject(name, commit, tree)}
	}
	if c.Attempt != nil {
		return attest.DeliverableSubjects(c.Attempt.Deliverable)
	}
	return nil
}

// completionPredicate fills the predicate from c and its message's fields.
func completionPredicate(c models.Completion, tc TaskComplete, ledger attest.LedgerRef) attest.Predicate {
	if ledger.Kind == "" {
		ledger.Kind = "local"
	}
	ledger.Entry = models.LedgerTaskComplete
	p := attest.Predicate{
		Task: tc.TaskID, Goal: tc.GoalID, Step: tc.Step, Title: strings.TrimSpace(c.Task.Title),
		Contract: attest.Digest{"sha384": tc.Contract}, Output: tc.Output, Kind: tc.kind(),
		Builder: agentName(c.Builder, ""), Approver: agentName(c.Approver, ""), Verifier: agentName(c.Verifier, RunnerName),
		Checks: []models.CheckResult{}, Judge: c.Judge.Redacted(), Ledger: ledger, VerifiedAt: c.At.UTC(),
	}
	if a := c.Attempt; a != nil {
		p.Attempt, p.Criteria, p.Usage = a.Number, a.Criteria, a.Usage
		if a.Checks != nil {
			p.Checks = a.Checks
		}
	}
	return p
}
