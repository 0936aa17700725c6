// Package attest makes and checks Countersign's attestations: for each verified
// completion, an in-toto Statement (v1) whose subject is what was verified — the landed
// git commit (digests gitCommit and gitTree) or, for work without a git workspace, the
// deliverable's files by sha256 — and whose predicate (PredicateType) is the runner's
// account of how it was verified. The Statement is signed in a DSSE envelope
// (PayloadType) with the runner's ECDSA P-256 key (key.go), so anyone with the public
// key can check it with cosign verify-blob-attestation or with
// `countersign attest verify` (verify.go). The format is the in-toto attestation Go
// bindings' and the envelope go-securesystemslib's; this package only fills them in.
//
// The ledger's task.complete names the attestation's Digest, so the attestation is
// made before that entry exists: the ledger sequence and HCS consensus time of the
// entry cannot be inside it. A verifier reads them from the entry that names the
// digest (see docs/attestations.md).
package attest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	intoto "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/countersign/countersign/models"
)

// PredicateType names Countersign's predicate and its version. A change that removes
// or changes the meaning of a field is a new version (…/v2); adding a field is not.
const PredicateType = "https://countersign.dev/attestation/verified-completion/v1"

// PayloadType is the DSSE payload type of an in-toto Statement, what cosign expects.
const PayloadType = "application/vnd.in-toto+json"

// Predicate is what Countersign says about a verified completion: what it was checked
// against, how each check went, who built, approved and verified it, what it used, and
// where the ledger records it. Field names are the predicate's JSON, documented in
// docs/attestations.md.
type Predicate struct {
	// Task is the task's id; Goal and Step its goal and workflow step (0: none).
	Task  int64  `json:"task"`
	Goal  int64  `json:"goal,omitempty"`
	Step  int    `json:"step,omitempty"`
	Title string `json:"title,omitempty"`
	// Contract is the SHA-384 of the task's contract, as task.complete names it.
	Contract Digest `json:"contract"`
	// Output is the SHA-384 of the verified output, when there is one.
	Output string `json:"output,omitempty"`
	// Kind is how the task was verified: runner, advisory or override.
	Kind string `json:"kind"`
	// Builder, Approver and Verifier are the agents' names ("runner" for the runner).
	Builder  string `json:"builder,omitempty"`
	Approver string `json:"approver,omitempty"`
	Verifier string `json:"verifier"`
	// Attempt is the number of the attempt that passed (0 when no attempt ran).
	Attempt int `json:"attempt,omitempty"`
	// Checks and Criteria are the verdict of every check layer and contract criterion
	// on that attempt; Judge is the judge's report (protected paths, test floor,
	// held-out counts, canaries), held-out names withheld as for any non-lead reader.
	Checks   []models.CheckResult     `json:"checks"`
	Criteria []models.CriterionResult `json:"criteria,omitempty"`
	Judge    *models.JudgeReport      `json:"judge,omitempty"`
	// Usage is what the attempt used, metered by the model gateway when it ran there
	// (usage.source "metered"), with what the worker reported beside it.
	Usage *models.Usage `json:"usage,omitempty"`
	// Ledger says where the task.complete naming this attestation's digest is posted.
	Ledger LedgerRef `json:"ledger"`
	// VerifiedAt is when the task was verified (the task.complete's ts).
	VerifiedAt time.Time `json:"verified_at"`
}

// Digest is a digest set, algorithm to lower-case hex.
type Digest map[string]string

// LedgerRef names the ledger a completion is recorded on: "local" (the hash chain in
// the database) or "hcs" with its network and topic. The entry's sequence and consensus
// time are the entry's own (see the package comment).
type LedgerRef struct {
	Kind    string `json:"kind"`
	Network string `json:"network,omitempty"`
	Topic   string `json:"topic,omitempty"`
	// Entry is the ledger message type that names the digest: "task.complete".
	Entry string `json:"entry"`
}

// Subject is one thing the attestation is about: a name and its digests.
type Subject struct {
	Name   string
	Digest Digest
}

// CommitSubject is the subject of a landed git commit: gitCommit and, when known,
// gitTree (the tree the judge checked).
func CommitSubject(repoName, commit, tree string) Subject {
	d := Digest{"gitCommit": commit}
	if tree != "" {
		d["gitTree"] = tree
	}
	return Subject{Name: repoName, Digest: d}
}

// DeliverableSubjects are the subjects of a deliverable: each kept file by its path
// and sha256.
func DeliverableSubjects(d *models.Deliverable) []Subject {
	if d == nil {
		return nil
	}
	out := make([]Subject, 0, len(d.Files))
	for _, f := range d.Files {
		out = append(out, Subject{Name: f.Path, Digest: Digest{"sha256": f.SHA256}})
	}
	return out
}

// ErrNoSubject says a completion has nothing an attestation could name: no commit and
// no deliverable.
var ErrNoSubject = errors.New("attest: the completion has no commit and no deliverable to attest")

// Statement returns the in-toto Statement's JSON for subjects and p, validated by the
// in-toto bindings. These bytes are what is signed (the DSSE payload) and what Digest
// hashes.
func Statement(subjects []Subject, p Predicate) ([]byte, error) {
	if len(subjects) == 0 {
		return nil, ErrNoSubject
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("attest: encode predicate: %w", err)
	}
	pred := &structpb.Struct{}
	if err := protojson.Unmarshal(raw, pred); err != nil {
		return nil, fmt.Errorf("attest: predicate as a struct: %w", err)
	}
	st := &intoto.Statement{Type: intoto.StatementTypeUri, PredicateType: PredicateType, Predicate: pred}
	for _, s := range subjects {
		st.Subject = append(st.Subject, &intoto.ResourceDescriptor{Name: s.Name, Digest: s.Digest})
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("attest: statement: %w", err)
	}
	b, err := protojson.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("attest: encode statement: %w", err)
	}
	// protojson's output is deliberately unstable in whitespace; compact it so the
	// bytes (and the digest) do not depend on the library's mood.
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// StatementDigest is the attestation's digest: the lower-case hex SHA-256 of the Statement's
// bytes (the DSSE payload, decoded). task.complete's "attestation" field carries it.
func StatementDigest(statement []byte) string {
	h := sha256.Sum256(statement)
	return hex.EncodeToString(h[:])
}
