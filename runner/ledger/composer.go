package ledger

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/attest"
)

// Composer implements models.LedgerComposer: the service calls it inside the
// transaction of a state change to build the outbox row. The zero value is ready and
// signs no attestations; with Signer set every task.complete that has a subject (a
// commit or a deliverable) carries a signed attestation and names its digest.
type Composer struct {
	// Signer signs attestations (runner/attest); nil: none are made.
	Signer *attest.Signer
	// Ledger names the ledger the attestations say their completions are posted on.
	Ledger attest.LedgerRef
}

var _ models.LedgerComposer = Composer{}

// RunnerName is the name written for a party that is not an agent (a nil verifier
// means the runner verified).
const RunnerName = "runner"

// ContractHash returns the SHA-384 hex of the JSON encoding of c: the "contract"
// field of task.complete. The contract is fixed before delegation, so the hash names
// exactly what the work was checked against.
func ContractHash(c contract.Contract) (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("ledger: encode contract: %w", err)
	}
	return SHA384Hex(b), nil
}

func agentName(a *models.Agent, def string) string {
	if a == nil || a.Name == "" {
		return def
	}
	return a.Name
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// TaskComplete builds the task.complete entry for c.Task, with its attestation when
// the composer signs them. A nil verifier is the runner.
func (k Composer) TaskComplete(c models.Completion) (*models.LedgerEntry, error) {
	t := c.Task
	ch, err := ContractHash(t.Contract)
	if err != nil {
		return nil, err
	}
	tree := ""
	if c.Judge != nil {
		tree = c.Judge.Tree // the judged candidate's tree, which the verified commit's equals
	}
	tc := TaskComplete{
		TaskID: t.ID, GoalID: deref(t.GoalID), Step: t.StepNum,
		Agent: agentName(c.Builder, ""), Verifier: agentName(c.Verifier, RunnerName), Kind: c.Kind,
		Contract: ch, Output: c.OutputHash, Override: t.Override, Judge: JudgeCountsOf(c.Judge), Commit: t.Commit, Tree: tree, At: c.At,
	}
	envelope, digest, err := k.attestation(c, tc)
	if err != nil {
		return nil, err
	}
	tc.Attestation = digest
	e, err := tc.Entry()
	if err != nil {
		return nil, err
	}
	e.Attestation = envelope
	return e, nil
}

// TaskBlocked builds the task.blocked entry: p in full as the payload, a summary with
// its hash as the message.
func (Composer) TaskBlocked(t *models.Task, p models.BlockedPayload) (*models.LedgerEntry, error) {
	payload, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("ledger: encode blocked payload: %w", err)
	}
	stage := ""
	if n := len(p.Attempts); n > 0 {
		stage = p.Attempts[n-1].Stage
	}
	at := p.TS
	if at.IsZero() {
		at = time.Now()
	}
	return TaskBlocked{
		TaskID: t.ID, GoalID: deref(t.GoalID), Step: t.StepNum, Agent: p.Agent,
		Attempts: len(p.Attempts), Stage: stage, Payload: payload, At: at,
	}.Entry()
}

// GoalVerified builds the goal.verified entry; the payload holds the goal's title, its
// lead's notes and the task counts.
func (Composer) GoalVerified(g *models.Goal, lead *models.Agent, counts map[models.TaskState]int, at time.Time) (*models.LedgerEntry, error) {
	payload, err := json.Marshal(struct {
		Goal   int64                    `json:"goal"`
		Title  string                   `json:"title"`
		Notes  string                   `json:"notes"`
		Counts map[models.TaskState]int `json:"counts"`
	}{g.ID, g.Title, g.Notes, counts})
	if err != nil {
		return nil, fmt.Errorf("ledger: encode goal payload: %w", err)
	}
	deferred := 0
	if g.Deferred != nil && g.Deferred.Status == models.DeferredPassed {
		deferred = len(g.Deferred.Criteria)
	}
	return GoalVerified{
		GoalID: g.ID, Verifier: agentName(lead, ""), Verified: counts[models.TaskVerified],
		Cancelled: counts[models.TaskCancelled], Deferred: deferred, Payload: payload, At: at,
	}.Entry()
}

// revokedPayload is the JSON kept with a revocation: what it withdraws and why, in the
// person's words.
type revokedPayload struct {
	Task      int64  `json:"task,omitempty"`
	Goal      int64  `json:"goal,omitempty"`
	RevokesID int64  `json:"revokes_entry"`
	Why       string `json:"why"`
	Reason    string `json:"reason"`
}

// TaskRevoked builds the task.revoked entry withdrawing revoked (t's latest
// task.complete).
func (Composer) TaskRevoked(t *models.Task, revoked *models.LedgerEntry, by *models.Agent, why, reason string, at time.Time) (*models.LedgerEntry, error) {
	payload, err := json.Marshal(revokedPayload{Task: t.ID, Goal: deref(t.GoalID), RevokesID: revoked.ID, Why: why, Reason: reason})
	if err != nil {
		return nil, fmt.Errorf("ledger: encode revocation payload: %w", err)
	}
	return Revoked{Type: models.LedgerTaskRevoked, TaskID: t.ID, GoalID: deref(t.GoalID), Step: t.StepNum,
		By: agentName(by, RunnerName), Why: why, RevokesID: revoked.ID, Revokes: revoked.Sequence, Payload: payload, At: at}.Entry()
}

// GoalRevoked builds the goal.revoked entry withdrawing revoked (g's latest
// goal.verified).
func (Composer) GoalRevoked(g *models.Goal, revoked *models.LedgerEntry, by *models.Agent, why, reason string, at time.Time) (*models.LedgerEntry, error) {
	payload, err := json.Marshal(revokedPayload{Goal: g.ID, RevokesID: revoked.ID, Why: why, Reason: reason})
	if err != nil {
		return nil, fmt.Errorf("ledger: encode revocation payload: %w", err)
	}
	return Revoked{Type: models.LedgerGoalRevoked, GoalID: g.ID, By: agentName(by, RunnerName), Why: why,
		RevokesID: revoked.ID, Revokes: revoked.Sequence, Payload: payload, At: at}.Entry()
}
