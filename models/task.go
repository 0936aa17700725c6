package models

import (
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/models/contract"
)

// TaskState is a task's lifecycle state.
type TaskState string

// The task states. The main line is pending → assigned → in_progress → review →
// completed → verified; blocked waits in the inbox once attempts are exhausted;
// cancelled is final.
const (
	TaskPending    TaskState = "pending"
	TaskAssigned   TaskState = "assigned"
	TaskInProgress TaskState = "in_progress"
	TaskReview     TaskState = "review"
	TaskCompleted  TaskState = "completed"
	TaskVerified   TaskState = "verified"
	TaskBlocked    TaskState = "blocked"
	TaskCancelled  TaskState = "cancelled"
)

// TaskStates lists every task state in lifecycle order.
var TaskStates = []TaskState{TaskPending, TaskAssigned, TaskInProgress, TaskWaiting, TaskReview, TaskCompleted, TaskVerified, TaskBlocked, TaskCancelled}

// ValidTaskState reports whether s names a task state.
func ValidTaskState(s string) bool { return slices.Contains(TaskStates, TaskState(s)) }

// Action is something done to a task. Each action is legal from a fixed set of states
// and leads to one state; TaskTransitions is the whole table.
type Action string

// The task actions.
const (
	ActAssign             Action = "assign"
	ActStart              Action = "start"
	ActSubmit             Action = "submit"
	ActApprove            Action = "approve"
	ActReject             Action = "reject"
	ActVerify             Action = "verify"
	ActRejectVerification Action = "reject-verification"
	ActReopen             Action = "reopen"
	ActCancel             Action = "cancel"
	ActBlock              Action = "block"    // runner: attempts exhausted
	ActRetry              Action = "retry"    // exec: back to work with guidance
	ActReassign           Action = "reassign" // exec or lead: another assignee
	ActAccept             Action = "accept"   // exec: accept blocked work with a recorded reason
)

// Transition is one row of the task lifecycle table.
type Transition struct {
	From []TaskState
	To   TaskState
}

// TaskTransitions is the task lifecycle: for each action, the states it may be taken
// from and the state it leads to. Retry, reassign, amend and answering a blocked
// task's impossible claim lead to assigned when the task has an assignee and to
// pending otherwise; the table lists assigned. Answer from blocked needs an open
// impossible claim (Task.OpenImpossible).
var TaskTransitions = map[Action]Transition{
	ActAssign:             {From: []TaskState{TaskPending, TaskAssigned}, To: TaskAssigned},
	ActStart:              {From: []TaskState{TaskAssigned}, To: TaskInProgress},
	ActSubmit:             {From: []TaskState{TaskInProgress}, To: TaskReview},
	ActApprove:            {From: []TaskState{TaskReview}, To: TaskCompleted},
	ActReject:             {From: []TaskState{TaskReview}, To: TaskInProgress},
	ActVerify:             {From: []TaskState{TaskCompleted}, To: TaskVerified},
	ActRejectVerification: {From: []TaskState{TaskCompleted}, To: TaskInProgress},
	ActReopen:             {From: []TaskState{TaskVerified}, To: TaskInProgress},
	ActCancel:             {From: []TaskState{TaskPending, TaskAssigned, TaskInProgress, TaskWaiting, TaskReview, TaskCompleted, TaskBlocked}, To: TaskCancelled},
	ActBlock:              {From: []TaskState{TaskInProgress, TaskWaiting}, To: TaskBlocked},
	ActAsk:                {From: []TaskState{TaskInProgress}, To: TaskWaiting},
	ActAnswer:             {From: []TaskState{TaskWaiting, TaskBlocked}, To: TaskAssigned},
	ActAmend:              {From: []TaskState{TaskBlocked}, To: TaskAssigned},
	ActRetry:              {From: []TaskState{TaskBlocked}, To: TaskAssigned},
	ActReassign:           {From: []TaskState{TaskBlocked, TaskPending, TaskAssigned}, To: TaskAssigned},
	ActAccept:             {From: []TaskState{TaskBlocked}, To: TaskVerified},
}

// Actions lists every action in a stable order (for tests and forms).
var Actions = []Action{ActAssign, ActStart, ActSubmit, ActApprove, ActReject, ActVerify, ActRejectVerification, ActReopen, ActCancel, ActBlock, ActRetry, ActReassign, ActAccept, ActAsk, ActAnswer, ActAmend}

// CheckTransition returns the state action leads to from cur, or an ECONFLICT error
// naming the current state and the actions allowed from it.
func CheckTransition(cur TaskState, action Action) (TaskState, error) {
	t, ok := TaskTransitions[action]
	if !ok {
		return "", Errorf(EINVALID, "unknown action %q", action)
	}
	if !slices.Contains(t.From, cur) {
		return "", &Error{
			Code:    ECONFLICT,
			Message: "cannot " + string(action) + " a task that is " + string(cur),
			State:   string(cur),
			Allowed: AllowedActions(cur),
		}
	}
	return t.To, nil
}

// AllowedActions lists the actions legal from state cur, in the order of Actions.
func AllowedActions(cur TaskState) []string {
	var out []string
	for _, a := range Actions {
		if slices.Contains(TaskTransitions[a].From, cur) {
			out = append(out, string(a))
		}
	}
	return out
}

// Policy names who approves or verifies a task: "runner" (the runner, after its checks
// pass; for work the runner did not run, any eligible agent), "any" (any agent the
// separation-of-duties rules allow), or a role name.
type Policy = string

// The fixed policies; any other value is a role.
const (
	PolicyRunner Policy = "runner"
	PolicyAny    Policy = "any"
)

// Task is one unit of work.
type Task struct {
	ID           int64             `json:"id"`
	GoalID       *int64            `json:"goal_id,omitempty"`
	RunID        *int64            `json:"run_id,omitempty"`
	StepNum      int               `json:"step_num,omitempty"`
	Title        string            `json:"title"`
	Brief        string            `json:"brief"`
	Role         string            `json:"role"`
	State        TaskState         `json:"state"`
	Priority     int               `json:"priority"`
	Approve      Policy            `json:"approve"`
	Verify       Policy            `json:"verify"`
	Contract     contract.Contract `json:"contract"`
	DependsOn    []int64           `json:"depends_on,omitempty"`
	CreatorID    int64             `json:"creator_id"`
	ParentTaskID *int64            `json:"parent_task_id,omitempty"` // created through an attempt token of this task
	SpawnedBy    *int64            `json:"spawned_by,omitempty"`     // the pilot's task: this is its minion task (see PilotOf)
	AssigneeID   *int64            `json:"assignee_id,omitempty"`
	BuilderID    *int64            `json:"builder_id,omitempty"`  // who did the work (set on start)
	ApproverID   *int64            `json:"approver_id,omitempty"` // who approved in review
	VerifierID   *int64            `json:"verifier_id,omitempty"` // who verified
	Summary      string            `json:"summary,omitempty"`     // the builder's submission summary
	FilesChanged string            `json:"files_changed,omitempty"`
	Notes        string            `json:"notes,omitempty"`    // the verifier's notes
	Reason       string            `json:"reason,omitempty"`   // the last rejection reason or guidance; part of the next brief
	Rejections   int               `json:"rejections"`         // verifier rejections so far
	AttemptsUsed int               `json:"attempts_used"`      // worker attempts counted against the budget
	Override     bool              `json:"override,omitempty"` // accepted by the exec without passing checks
	LeaseOwner   string            `json:"lease_owner,omitempty"`
	LeaseUntil   *time.Time        `json:"lease_until,omitempty"`
	CreatedAt    time.Time         `json:"created_at"`
	UpdatedAt    time.Time         `json:"updated_at"`
	VerifiedAt   *time.Time        `json:"verified_at,omitempty"`
	// Branch is a worktree task's own branch (countersign/task-<id>); Base the commit
	// it started from; Commit the commit that was verified: the checks ran on exactly
	// its tree. All empty for a task without a git workspace.
	Branch string `json:"branch,omitempty"`
	Base   string `json:"base,omitempty"`
	Commit string `json:"commit,omitempty"`
	// Fingerprint is what the runner's pass covered, to tell later whether the work
	// is still what was verified; nil for work the runner never passed.
	Fingerprint *Fingerprint `json:"-"`
	// Drift, set while a recheck finds the verified work changed: the task is stale.
	Drift *Drift `json:"drift,omitempty"`
	// Triage is the triage model's decision once the task's attempts ran out on a
	// work failure; nil while it never did (a task is triaged at most once).
	Triage *Triage `json:"triage,omitempty"`
	// Questions are the questions its workers asked a person, oldest first, with
	// their answers; the last is open while the task waits.
	Questions []Question `json:"questions,omitempty"`
	// ReviewOf, on a fix task an artifact review added (review_fix.go), is the task
	// whose review failed: the fix works in that task's workspace and the review runs
	// again once it is verified.
	ReviewOf *int64 `json:"review_of,omitempty"`
	// ReviewWarnings are the findings a review left outstanding when its rounds ran out
	// and its contract said proceed_with_warnings; "" when none.
	ReviewWarnings string `json:"review_warnings,omitempty"`
	// Canary, on a canary task a lead scheduled (canary.go), names where it came from
	// (a built-in's kind, or CanaryTeam); "" for real work. A canary task runs in a
	// fresh scratch workspace and never lands. It is never in the task's JSON: the
	// worker reading its own task must not be able to tell.
	Canary string `json:"-"`
}

// Validate checks a new task's own fields (not the contract, which validates itself).
func (t *Task) Validate() error {
	var fe FieldErrors
	t.Title = strings.TrimSpace(t.Title)
	t.Role = strings.ToLower(strings.TrimSpace(t.Role))
	if t.Title == "" {
		fe.Add("title", "is required")
	} else if len(t.Title) > 200 {
		fe.Add("title", "must be at most 200 characters")
	}
	if len(t.Brief) > 100000 {
		fe.Add("brief", "must be at most 100000 characters")
	}
	if t.Role == "" {
		fe.Add("role", "is required")
	} else if !contract.ValidRole(t.Role) {
		fe.Add("role", "must be 1-32 lower-case letters, digits, '_' or '-'")
	}
	for name, p := range map[string]Policy{"approve": t.Approve, "verify": t.Verify} {
		if p != "" && p != PolicyRunner && p != PolicyAny && !contract.ValidRole(p) {
			fe.Add(name, "must be runner, any or a role")
		}
	}
	if err := t.Contract.Validate(); err != nil {
		if e, ok := err.(*Error); ok {
			fe.Merge("contract", FieldErrors(e.Fields))
		}
	}
	return fe.Err()
}

// TaskFilter selects tasks for listing. Zero fields do not filter.
type TaskFilter struct {
	State      TaskState
	GoalID     int64
	AssigneeID int64
	Role       string
	Limit      int
	// AfterID is the keyset cursor: the tasks listed after this one in Sort's order.
	AfterID int64
	// Sort orders the list, newest first: ListSortID (the default), ListSortUpdated
	// or ListSortCreated, each with the id breaking ties.
	Sort string
}

// The orders of the task and goal lists (TaskFilter.Sort, GoalFilter.Sort), each
// newest first.
const (
	ListSortID      = "id"
	ListSortUpdated = "updated"
	ListSortCreated = "created"
)

// ListSorts are the list orders, the default first.
var ListSorts = []string{ListSortID, ListSortUpdated, ListSortCreated}
