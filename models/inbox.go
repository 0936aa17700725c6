package models

import (
	"encoding/json"
	"time"

	"github.com/countersign/countersign/models/contract"
)

// Kinds of inbox items.
const (
	InboxBlocked    = "blocked"    // attempts exhausted; payload is the task.blocked payload
	InboxEscalation = "escalation" // rejected by verifiers twice
	InboxAdvisory   = "advisory"   // advisory output to look at
	// InboxAgentPaused: a worker agent's own command could not run (exit 126 or 127),
	// so the runner paused (disabled) the agent; its task waits, uncharged. Resolved
	// when an admin enables the agent again, or dismissed by a lead or exec.
	InboxAgentPaused = "agent_paused"
	// InboxBudget: a budget's spend crossed BudgetWarnAt; a notice, dismissed once read.
	InboxBudget = "budget"
	// InboxDrift: what a verified task's verification covered changed afterwards (see
	// Drift). Resolved when a lead reopens the task (task.revoked, reason drift) or a
	// recheck finds it as verified again.
	InboxDrift = "drift"
)

// InboxKinds lists every kind of inbox item.
var InboxKinds = []string{InboxBlocked, InboxEscalation, InboxAdvisory, InboxAgentPaused, InboxBudget, InboxDrift, InboxQuestion, InboxAdvisoryPrompt}

// InboxItem is something waiting for a person.
type InboxItem struct {
	ID         int64           `json:"id"`
	Kind       string          `json:"kind"`
	TaskID     int64           `json:"task_id"`
	GoalID     *int64          `json:"goal_id,omitempty"`
	Title      string          `json:"title"`
	Payload    json.RawMessage `json:"payload,omitempty"`
	Resolved   bool            `json:"resolved"`
	ResolvedBy *int64          `json:"resolved_by,omitempty"`
	Resolution string          `json:"resolution,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
	ResolvedAt *time.Time      `json:"resolved_at,omitempty"`
	// EscalatedAt is when it went past its deadline and was escalated to the lead.
	EscalatedAt *time.Time `json:"escalated_at,omitempty"`
}

// BlockedPayload is the task.blocked payload of completion-verification.md.
type BlockedPayload struct {
	Type               string              `json:"type"`
	TaskID             int64               `json:"task_id"`
	WorkflowInstanceID *int64              `json:"workflow_instance_id"`
	StepNum            int                 `json:"step_num"`
	Agent              string              `json:"agent"`
	CompletionSpec     contract.Completion `json:"completion_spec"`
	Attempts           []BlockedAttempt    `json:"attempts"`
	// Missing lists what kept a task that was not ready from its first attempt (its
	// one entry in Attempts has stage readiness); empty otherwise.
	Missing []string `json:"missing,omitempty"`
	// Triage is what the triage model said before the task reached a person (an
	// escalation's summary and recommendation, or why triage failed); nil when none ran.
	Triage *Triage   `json:"triage,omitempty"`
	TS     time.Time `json:"ts"`
}

// BlockedAttempt is one attempt's failure in a BlockedPayload.
type BlockedAttempt struct {
	Attempt int    `json:"attempt"`
	Stage   string `json:"stage"`
	Failure string `json:"failure"`
}
