package models

import "time"

// Triage statuses.
const (
	// TriagePending: the task's attempts ran out on a work failure and the triage
	// model is being asked; the task keeps its lease meanwhile.
	TriagePending = "pending"
	// TriageRetry: triage gave the task one more attempt with a new approach.
	TriageRetry = "retry"
	// TriageEscalate: triage sent the task to the exec with a summary and a
	// recommendation.
	TriageEscalate = "escalate"
	// TriageFailed: triage gave no usable answer; the task went to the exec with
	// the raw blocked payload (fail safe).
	TriageFailed = "failed"
)

// What a triage may recommend the exec do with a task it escalates.
const (
	RecommendRetry    = "retry"    // retry with guidance
	RecommendReassign = "reassign" // reassign to another role or agent
	RecommendAccept   = "accept"   // accept the work as it is
	RecommendCancel   = "cancel"
)

// Triage is what a stronger model decided about a task whose attempts ran out on a
// work failure, before a person sees it: one more attempt with a different approach,
// or escalation to the exec with a summary and a recommended action. A task is
// triaged at most once.
type Triage struct {
	Status string    `json:"status"`
	At     time.Time `json:"at"`
	// Approach is the new approach of a retry, given to the worker in the brief.
	Approach string `json:"approach,omitempty"`
	// Summary, Recommend (RecommendRetry, …), Role and Guidance are an escalation's,
	// shown with the inbox item.
	Summary   string `json:"summary,omitempty"`
	Recommend string `json:"recommend,omitempty"`
	Role      string `json:"role,omitempty"`
	Guidance  string `json:"guidance,omitempty"`
	// Error says why triage gave no usable answer (status failed).
	Error string `json:"error,omitempty"`
	// Usage is what the triage call spent; it counts against the task's budgets
	// through the attempt that ran out (see the runner).
	Usage *Usage `json:"usage,omitempty"`
}
