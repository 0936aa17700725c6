package models

import "time"

// Ledger entry types: the only messages that reach the ledger.
const (
	LedgerTaskComplete = "task.complete"
	LedgerTaskBlocked  = "task.blocked"
	LedgerGoalVerified = "goal.verified"
	// LedgerTaskRevoked withdraws a task's last task.complete: the task was reopened,
	// or what was verified changed afterwards (drift).
	LedgerTaskRevoked = "task.revoked"
	// LedgerGoalRevoked withdraws a goal's last goal.verified: the goal left verified.
	LedgerGoalRevoked = "goal.revoked"
)

// Verification kinds: how a task.complete was verified. The entry's verifier names
// who looked ("runner" when no person did).
const (
	// KindRunner: every automated check of the contract passed.
	KindRunner = "runner"
	// KindAdvisory: the contract has no automated checks; the output was looked at by
	// the verifier, a person, or by nobody when the runner verified it.
	KindAdvisory = "advisory"
	// KindOverride: an exec accepted the work without its checks passing.
	KindOverride = "override"
)

// Revocation reasons, the "why" of task.revoked and goal.revoked.
const (
	// RevokedReopened: a lead reopened the task (or one of the goal's tasks).
	RevokedReopened = "reopened"
	// RevokedDrift: what was verified changed afterwards, and a lead confirmed it.
	RevokedDrift = "drift"
)

// Ledger entry statuses.
const (
	LedgerPending = "pending"
	LedgerPosted  = "posted"
	LedgerFailed  = "failed"
)

// LedgerEntry is an outbox row: written in the same transaction as the state change it
// records, posted later, in ID order, exactly once.
type LedgerEntry struct {
	ID      int64  `json:"id"`
	Type    string `json:"type"`
	TaskID  *int64 `json:"task_id,omitempty"`
	GoalID  *int64 `json:"goal_id,omitempty"`
	Message []byte `json:"-"` // the exact bytes posted
	Payload []byte `json:"-"` // the full payload when Message is a summary of it
	// Attestation is a task.complete's signed attestation (the DSSE envelope's JSON,
	// runner/attest) whose digest the message names; nil for other types and for
	// completions written without a signing key.
	Attestation []byte `json:"-"`
	Status      string `json:"status"`
	Attempts    int    `json:"attempts"`
	LastError   string `json:"last_error,omitempty"`
	Override    bool   `json:"override,omitempty"`
	// Kind is how a task.complete was verified (KindRunner, KindAdvisory,
	// KindOverride); empty for other types.
	Kind string `json:"kind,omitempty"`
	// RevokesID is the entry a task.revoked or goal.revoked withdraws.
	RevokesID *int64    `json:"revokes_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`

	// Transaction prepared before sending (HCS): its id and signed bytes, so that an
	// unknown outcome is resolved by asking for the receipt of the same id.
	TxID    string `json:"tx_id,omitempty"`
	TxBytes []byte `json:"-"`

	// Receipt.
	Sequence    int64      `json:"sequence,omitempty"`
	RunningHash string     `json:"running_hash,omitempty"` // hex
	ConsensusAt *time.Time `json:"consensus_at,omitempty"`
	PostedAt    *time.Time `json:"posted_at,omitempty"`
}
