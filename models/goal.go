package models

import (
	"github.com/countersign/countersign/models/contract"
	"strings"
	"time"
)

// GoalState is a goal's lifecycle state.
type GoalState string

// The goal states: open → active → pending_verify → verified, and back to active when
// the lead rejects or a verified task is reopened.
const (
	GoalOpen          GoalState = "open"
	GoalActive        GoalState = "active"
	GoalPendingVerify GoalState = "pending_verify"
	GoalVerified      GoalState = "verified"
)

// GoalStates lists the goal states in lifecycle order.
var GoalStates = []GoalState{GoalOpen, GoalActive, GoalPendingVerify, GoalVerified}

// Goal is a flat container of tasks with its own lifecycle.
type Goal struct {
	ID          int64     `json:"id"`
	Title       string    `json:"title"`
	Description string    `json:"description"`
	Project     string    `json:"project"`
	State       GoalState `json:"state"`
	CreatorID   int64     `json:"creator_id"`
	VerifierID  *int64    `json:"verifier_id,omitempty"`
	Notes       string    `json:"notes,omitempty"` // the lead's verification notes
	// Budget caps what all the goal's tasks may spend; nil: no cap.
	Budget *contract.Budget `json:"budget,omitempty"`
	// Deferred are the deferred criteria of its tasks, run once it waits for
	// verification; nil when it has none (or does not wait yet).
	Deferred   *DeferredChecks `json:"deferred,omitempty"`
	VerifiedAt *time.Time      `json:"verified_at,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
}

// Validate checks a new goal's fields.
func (g *Goal) Validate() error {
	var fe FieldErrors
	g.Title = strings.TrimSpace(g.Title)
	if g.Title == "" {
		fe.Add("title", "is required")
	} else if len(g.Title) > 200 {
		fe.Add("title", "must be at most 200 characters")
	}
	if len(g.Description) > 20000 {
		fe.Add("description", "must be at most 20000 characters")
	}
	if len(g.Project) > 100 {
		fe.Add("project", "must be at most 100 characters")
	}
	if msg := g.Budget.Problem(); msg != "" {
		fe.Add("budget", msg)
	}
	return fe.Err()
}

// NextGoalState is the goal's automatic transition given its tasks' states: it becomes
// pending_verify when every task is verified or cancelled (and at least one verified),
// active as soon as work has started or when it was waiting for verification and is no
// longer complete. A verified goal only moves through Reopen, which the service drives.
func NextGoalState(cur GoalState, counts map[TaskState]int) GoalState {
	if cur == GoalVerified {
		return cur
	}
	total, done := 0, counts[TaskVerified]+counts[TaskCancelled]
	for _, n := range counts {
		total += n
	}
	if total > 0 && done == total && counts[TaskVerified] > 0 {
		return GoalPendingVerify
	}
	if cur == GoalPendingVerify {
		return GoalActive
	}
	if cur == GoalOpen && total-counts[TaskPending]-counts[TaskAssigned]-counts[TaskCancelled] > 0 {
		return GoalActive
	}
	return cur
}

// GoalStatus is a goal with its tasks and the number of tasks in each state.
type GoalStatus struct {
	Goal   Goal              `json:"goal"`
	Counts map[TaskState]int `json:"counts"`
	Tasks  []Task            `json:"tasks"`
	// Spend is what the goal's tasks' attempts used (and running ones reserved).
	Spend Spend `json:"spend"`
}
