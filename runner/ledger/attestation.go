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

// AttestationRecord is what the ledger says of an attestation: the task.complete that
// names its digest and, when the completion was withdrawn since, the task.revoked that
// withdrew it.
type AttestationRecord struct {
	Complete *models.LedgerEntry
	Revoked  *models.LedgerEntry
	// Why is the revocation's reason (models.RevokedReopened or RevokedDrift).
	Why string
}

// revocationOff, in tests only, makes FindAttestation ignore revocations, to show
// the test that a revoked attestation fails would catch their loss.
var revocationOff bool

// ErrNotOnLedger says no posted task.complete names the attestation's digest.
var ErrNotOnLedger = errors.New("ledger: no posted task.complete names this attestation's digest")

// FindAttestation finds, in entries (the ledger oldest first, as ReadAll returns it),
// the posted task.complete of task taskID whose "attestation" is digest, and the
// task.revoked that withdraws it, if any (by entry id, or by the withdrawn entry's
// sequence, which is what a reader of the topic alone sees).
func FindAttestation(entries []models.LedgerEntry, taskID int64, digest string) (AttestationRecord, error) {
	var r AttestationRecord
	for i := range entries {
		e := &entries[i]
		if e.Status != models.LedgerPosted || e.TaskID == nil || *e.TaskID != taskID {
			continue
		}
		m, err := ParseMessage(e.Message)
		if err != nil {
			return r, err
		}
		switch {
		case r.Complete == nil && e.Type == models.LedgerTaskComplete && m.Attestation == digest:
			r.Complete = e
		case r.Complete != nil && r.Revoked == nil && !revocationOff && e.Type == models.LedgerTaskRevoked &&
			((e.RevokesID != nil && *e.RevokesID == r.Complete.ID) || (m.Revokes != 0 && m.Revokes == r.Complete.Sequence)):
			r.Revoked, r.Why = e, m.Why
		}
	}
	if r.Complete == nil {
		return r, ErrNotOnLedger
	}
	return r, nil
}
