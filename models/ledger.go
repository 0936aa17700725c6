package models

import "time"

// Ledger entry types: the only messages that reach the ledger.
const (
	LedgerTaskComplete = "task.complete"
	LedgerTaskBlocked  = "task.blocked"
	LedgerGoalVerified = "goal.verified"
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
	ID        int64     `json:"id"`
	Type      string    `json:"type"`
	TaskID    *int64    `json:"task_id,omitempty"`
	GoalID    *int64    `json:"goal_id,omitempty"`
	Message   []byte    `json:"-"` // the exact bytes posted
	Payload   []byte    `json:"-"` // the full payload when Message is a summary of it
	Status    string    `json:"status"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error,omitempty"`
	Override  bool      `json:"override,omitempty"`
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
