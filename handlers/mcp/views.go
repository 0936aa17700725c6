package mcp

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/countersign/countersign/models"
)

// TaskView is a task as a tool returns it: agents by name, and the tools that can move
// it on from its state (whether the caller may use them is for the rules to say).
type TaskView struct {
	ID           int64    `json:"id" jsonschema:"the task id; pass it as task_id to the task tools"`
	Title        string   `json:"title"`
	State        string   `json:"state" jsonschema:"pending, assigned, in_progress, review, completed, verified, blocked or cancelled"`
	Role         string   `json:"role" jsonschema:"the role the work needs"`
	GoalID       *int64   `json:"goal_id,omitempty"`
	Brief        string   `json:"brief,omitempty" jsonschema:"what the work is"`
	Assignee     string   `json:"assignee,omitempty" jsonschema:"the agent the task is assigned to"`
	Builder      string   `json:"builder,omitempty" jsonschema:"the agent who started the work"`
	Approver     string   `json:"approver,omitempty" jsonschema:"the agent who approved it in review"`
	Verifier     string   `json:"verifier,omitempty" jsonschema:"the agent who verified it"`
	Approve      string   `json:"approve" jsonschema:"who approves in review: runner (for work a person did: any eligible agent), any, or a role"`
	Verify       string   `json:"verify" jsonschema:"who verifies: runner (for work a person did: any eligible agent), any, or a role"`
	DependsOn    []int64  `json:"depends_on,omitempty" jsonschema:"tasks that must be verified before this one starts"`
	SpawnedBy    *int64   `json:"spawned_by,omitempty" jsonschema:"the pilot's task, when this is a minion task: the agent on it may submit this one but never verify it"`
	Summary      string   `json:"summary,omitempty" jsonschema:"the builder's submission summary"`
	FilesChanged string   `json:"files_changed,omitempty"`
	Notes        string   `json:"notes,omitempty" jsonschema:"the verifier's notes"`
	Reason       string   `json:"reason,omitempty" jsonschema:"the last rejection or reopening reason: what the next round must fix"`
	Rejections   int      `json:"rejections" jsonschema:"verifier rejections so far; the second escalates to the lead"`
	HeldOutTests int      `json:"held_out_tests,omitempty" jsonschema:"how many held-out tests the judge adds before the checks run; their files are never shown here"`
	NextTools    []string `json:"next_tools" jsonschema:"tools that move the task on from its state"`
}

// TaskLine is one task of a goal in goal_status.
type TaskLine struct {
	ID       int64  `json:"id"`
	Title    string `json:"title"`
	State    string `json:"state"`
	Role     string `json:"role"`
	Assignee string `json:"assignee,omitempty"`
}

// GoalView is a goal as a tool returns it.
type GoalView struct {
	ID          int64      `json:"id" jsonschema:"the goal id; pass it as goal_id"`
	Title       string     `json:"title"`
	Description string     `json:"description,omitempty"`
	Project     string     `json:"project,omitempty"`
	State       string     `json:"state" jsonschema:"open, active, pending_verify or verified"`
	Creator     string     `json:"creator,omitempty"`
	Verifier    string     `json:"verifier,omitempty" jsonschema:"the lead who verified the goal"`
	Notes       string     `json:"notes,omitempty" jsonschema:"the lead's notes on the integration test"`
	VerifiedAt  *time.Time `json:"verified_at,omitempty"`
}

// GoalStatusView is the answer of goal_status.
type GoalStatusView struct {
	Goal   GoalView       `json:"goal"`
	Counts map[string]int `json:"counts" jsonschema:"number of tasks in each task state (every state is present: pending, assigned, in_progress, review, completed, verified, blocked, cancelled)"`
	Total  int            `json:"total" jsonschema:"number of tasks in the goal"`
	Tasks  []TaskLine     `json:"tasks" jsonschema:"every task of the goal"`
	Next   string         `json:"next" jsonschema:"what the goal waits for"`
}

// InboxView is one inbox item.
type InboxView struct {
	ID         int64     `json:"id"`
	Kind       string    `json:"kind" jsonschema:"blocked, escalation, advisory or agent_paused"`
	TaskID     int64     `json:"task_id"`
	GoalID     *int64    `json:"goal_id,omitempty"`
	Title      string    `json:"title"`
	Payload    any       `json:"payload,omitempty" jsonschema:"details: for blocked, the completion spec and every attempt's failure; for escalation, the rejections"`
	Resolved   bool      `json:"resolved"`
	Resolution string    `json:"resolution,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

// InboxListView is the answer of inbox_list.
type InboxListView struct {
	Items []InboxView `json:"items"`
}

// namer resolves agent ids to names for one call.
type namer struct {
	ctx   context.Context
	store models.Store
	names map[int64]string
}

func newNamer(ctx context.Context, svc services) *namer {
	return &namer{ctx: ctx, store: svc.Store(), names: map[int64]string{}}
}

func (n *namer) name(id *int64) string {
	if id == nil {
		return ""
	}
	if s, ok := n.names[*id]; ok {
		return s
	}
	s := "agent " + strconv.FormatInt(*id, 10)
	if a, err := n.store.GetAgent(n.ctx, *id); err == nil {
		s = a.Name
	}
	n.names[*id] = s
	return s
}

func (n *namer) task(t *models.Task) TaskView {
	next := []string{}
	for _, a := range models.AllowedActions(t.State) {
		if tool, ok := taskActionTools[a]; ok {
			next = append(next, tool)
		}
	}
	return TaskView{
		ID: t.ID, Title: t.Title, State: string(t.State), Role: t.Role, GoalID: t.GoalID, Brief: t.Brief,
		Assignee: n.name(t.AssigneeID), Builder: n.name(t.BuilderID), Approver: n.name(t.ApproverID), Verifier: n.name(t.VerifierID),
		Approve: policyOrDefault(t.Approve), Verify: policyOrDefault(t.Verify), DependsOn: t.DependsOn, SpawnedBy: t.SpawnedBy,
		Summary: t.Summary, FilesChanged: t.FilesChanged, Notes: t.Notes, Reason: t.Reason, Rejections: t.Rejections,
		HeldOutTests: len(t.Contract.Verification.HeldOut) + t.Contract.Verification.HeldOutCount,
		NextTools:    next,
	}
}

func policyOrDefault(p models.Policy) string {
	if p == "" {
		return models.PolicyRunner
	}
	return p
}

func (n *namer) goal(g *models.Goal) GoalView {
	return GoalView{
		ID: g.ID, Title: g.Title, Description: g.Description, Project: g.Project, State: string(g.State),
		Creator: n.name(&g.CreatorID), Verifier: n.name(g.VerifierID), Notes: g.Notes, VerifiedAt: g.VerifiedAt,
	}
}

func (n *namer) status(st *models.GoalStatus) GoalStatusView {
	out := GoalStatusView{Goal: n.goal(&st.Goal), Counts: map[string]int{}, Tasks: []TaskLine{}}
	for _, s := range models.TaskStates {
		out.Counts[string(s)] = st.Counts[s]
		out.Total += st.Counts[s]
	}
	for i := range st.Tasks {
		t := &st.Tasks[i]
		out.Tasks = append(out.Tasks, TaskLine{ID: t.ID, Title: t.Title, State: string(t.State), Role: t.Role, Assignee: n.name(t.AssigneeID)})
	}
	out.Next = goalNext(st.Goal.State, out.Counts, out.Total)
	return out
}

// goalNext says in words what a goal waits for.
func goalNext(s models.GoalState, counts map[string]int, total int) string {
	switch s {
	case models.GoalVerified:
		return "nothing: the goal is verified"
	case models.GoalPendingVerify:
		return "a lead tests the integrated result and calls verify_goal, or reject_goal with a reason and fix tasks to send it back"
	}
	if total == 0 {
		return "tasks: create them with create_task (goal_id) or link them with link_task_to_goal"
	}
	open := total - counts[string(models.TaskVerified)] - counts[string(models.TaskCancelled)]
	return strconv.Itoa(open) + " of " + strconv.Itoa(total) + " tasks still to be verified"
}

func inboxView(it *models.InboxItem) InboxView {
	v := InboxView{ID: it.ID, Kind: it.Kind, TaskID: it.TaskID, GoalID: it.GoalID, Title: it.Title,
		Resolved: it.Resolved, Resolution: it.Resolution, CreatedAt: it.CreatedAt}
	if len(it.Payload) > 0 {
		var p any
		if json.Unmarshal(it.Payload, &p) == nil {
			v.Payload = p
		}
	}
	return v
}
