package models

import (
	"context"
	"slices"
	"time"
)

// "Waiting on you": every person's queue of what needs a human action they may take.
// It is read, never stored: the open inbox items, the tasks in review and completed
// (a person approves or verifies them), the goals waiting for a lead and the work
// assigned to a person, each kept when the viewer may take its primary action by the
// rules the actions themselves enforce (MayTake, CanResolveInbox, CanLead). Nothing
// here decides a permission of its own.

// Kinds of queue items besides the inbox kinds (an inbox item keeps its own kind).
const (
	QueueReview   = "review"      // a person's submission waits for approval
	QueueVerify   = "verify"      // completed work waits for a person's verification
	QueueGoal     = "goal_verify" // a goal waits for a lead's verification
	QueueAssigned = "assigned"    // work assigned to the viewer, to start or submit
)

// Queue actions that are not task actions (the task actions keep their names).
const (
	QueueOpen           = "open"            // look at it: the task, goal or agent page
	QueueVerifyGoal     = "verify-goal"     // VerifyGoal, with notes
	QueueRejectGoal     = "reject-goal"     // RejectGoal, with fix tasks (on the goal page)
	QueueDismiss        = "dismiss"         // ResolveInboxItem
	QueueProceed        = "proceed"         // ResolveAdvisoryPrompt, proceed
	QueueMakeVerifiable = "make-verifiable" // ResolveAdvisoryPrompt, make_verifiable (on the inbox)
	QueueAdvisoryCancel = "advisory-cancel" // ResolveAdvisoryPrompt, cancel
)

// queueLimit bounds each source a queue reads, so that a queue costs a handful of
// indexed queries whatever the number of tasks.
const queueLimit = 500

// QueueItem is one thing waiting on a person.
type QueueItem struct {
	// Kind is an inbox kind (InboxBlocked, …) or a Queue* kind.
	Kind    string `json:"kind"`
	TaskID  int64  `json:"task_id,omitempty"`
	GoalID  int64  `json:"goal_id,omitempty"`
	InboxID int64  `json:"inbox_id,omitempty"`
	AgentID int64  `json:"agent_id,omitempty"` // a paused agent
	// Subject is the task's or goal's title.
	Subject string `json:"subject"`
	// Why says in words why it waits.
	Why string `json:"why"`
	// Roles are the viewer's roles that let them take the primary action; empty when
	// it is theirs for another reason (creator, assignee, any eligible person).
	Roles []string `json:"roles,omitempty"`
	// Since is when it started waiting.
	Since time.Time `json:"since"`
	// Primary is the one action to offer first; Secondary the others, in order. Each
	// is a task action (ActRetry, …) or a Queue* action.
	Primary   string   `json:"primary"`
	Secondary []string `json:"secondary,omitempty"`
	// NeedsText names the primary action's text input ("reason", "notes") and
	// TextRequired whether it must be filled; "" when it takes none.
	NeedsText    string `json:"needs_text,omitempty"`
	TextRequired bool   `json:"text_required,omitempty"`
}

// QueueService reads every person's "Waiting on you" queue.
type QueueService struct {
	*core
}

// queueView is what one queue read holds: the viewer, the agents by id and the team.
type queueView struct {
	viewer *Agent
	agents map[int64]*Agent
	list   []Agent
	team   int
}

// builder returns t's builder (nil when none or unknown).
func (v *queueView) builder(t *Task) *Agent {
	if t.BuilderID == nil {
		return nil
	}
	return v.agents[*t.BuilderID]
}

// may reports whether agent a may take act on t now: its state allows it
// (CheckTransition) and the action's rules let a take it (MayTake).
func (v *queueView) may(a *Agent, t *Task, act Action) bool {
	if _, err := CheckTransition(t.State, act); err != nil {
		return false
	}
	return MayTake(a, t, act, v.builder(t), v.team)
}

// taskActs returns the actions of acts the viewer may take on t, in order.
func (v *queueView) taskActs(t *Task, acts ...Action) []string {
	var out []string
	for _, a := range acts {
		if v.may(v.viewer, t, a) {
			out = append(out, string(a))
		}
	}
	return out
}

// WaitingOn returns what waits on viewer, the longest waiting first: the items whose
// primary action viewer may take. A viewer acting through an attempt token (a
// worker's run) has no queue.
func (s *QueueService) WaitingOn(ctx context.Context, viewer *Agent) ([]QueueItem, error) {
	if viewer == nil || viewer.Scope != nil || viewer.IsRunner() || viewer.Disabled {
		return []QueueItem{}, nil
	}
	v, err := s.view(ctx, viewer)
	if err != nil {
		return nil, err
	}
	out := []QueueItem{}
	for _, read := range []func(context.Context, *queueView) ([]QueueItem, error){
		s.inboxItems, s.taskItems, s.goalItems, s.assignedItems,
	} {
		items, err := read(ctx, v)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	slices.SortStableFunc(out, func(a, b QueueItem) int { return a.Since.Compare(b.Since) })
	return out, nil
}

// Count returns how many items wait on viewer (WaitingOn's length).
func (s *QueueService) Count(ctx context.Context, viewer *Agent) (int, error) {
	items, err := s.WaitingOn(ctx, viewer)
	return len(items), err
}

// view reads the agents once for a queue.
func (s *QueueService) view(ctx context.Context, viewer *Agent) (*queueView, error) {
	agents, err := s.store.ListAgents(ctx)
	if err != nil {
		return nil, err
	}
	v := &queueView{viewer: viewer, agents: map[int64]*Agent{}, list: agents, team: TeamSize(agents)}
	for i := range agents {
		v.agents[agents[i].ID] = &agents[i]
	}
	return v, nil
}

// taskItems lists the tasks in review and completed whose approval or verification
// the viewer may give.
func (s *QueueService) taskItems(ctx context.Context, v *queueView) ([]QueueItem, error) {
	var out []QueueItem
	for _, st := range []TaskState{TaskReview, TaskCompleted} {
		tasks, err := s.store.ListTaskHeads(ctx, TaskFilter{State: st, Limit: queueLimit})
		if err != nil {
			return nil, err
		}
		for i := range tasks {
			if it, ok := v.taskItem(&tasks[i]); ok {
				out = append(out, it)
			}
		}
	}
	return out, nil
}

// taskItem is t's queue item when the viewer may approve or verify it.
func (v *queueView) taskItem(t *Task) (QueueItem, bool) {
	kind, primary, second, duty := QueueReview, ActApprove, ActReject, t.Approve
	if t.State == TaskCompleted {
		kind, primary, second, duty = QueueVerify, ActVerify, ActRejectVerification, t.Verify
	}
	if !v.may(v.viewer, t, primary) {
		return QueueItem{}, false
	}
	it := QueueItem{Kind: kind, TaskID: t.ID, GoalID: deref(t.GoalID), Subject: t.Title, Since: t.UpdatedAt,
		Primary: string(primary), Secondary: append(v.taskActs(t, second), QueueOpen)}
	it.Roles = v.rolesFor(func(a *Agent) bool { return v.may(a, t, primary) })
	by := "its worker"
	if b := v.builder(t); b != nil {
		by = b.Name
	}
	if kind == QueueReview {
		it.Why = by + " submitted it for review; it waits for approval by " + policyWords(duty)
	} else {
		it.Why = "Done by " + by + "; it waits for verification by " + policyWords(duty)
		it.NeedsText = "notes"
	}
	return it, true
}

// goalItems lists the goals waiting for a lead's verification, when the viewer is one.
func (s *QueueService) goalItems(ctx context.Context, v *queueView) ([]QueueItem, error) {
	if !CanLead(v.viewer) {
		return nil, nil
	}
	goals, err := s.store.ListGoals(ctx, GoalFilter{State: GoalPendingVerify, Limit: queueLimit})
	if err != nil {
		return nil, err
	}
	var out []QueueItem
	for _, g := range goals {
		it := QueueItem{Kind: QueueGoal, GoalID: g.ID, Subject: g.Title, Since: g.UpdatedAt, Roles: []string{RoleLead},
			Why:     "Every task is verified or cancelled; the goal waits for a lead to test the integrated result",
			Primary: QueueVerifyGoal, NeedsText: "notes", TextRequired: true, Secondary: []string{QueueRejectGoal, QueueOpen}}
		if !g.Deferred.Passed() {
			it.Why = "Every task is verified or cancelled; its deferred checks are " + g.Deferred.Status + " and must pass before it can be verified"
			it.Primary, it.NeedsText, it.TextRequired = QueueOpen, "", false
			it.Secondary = []string{QueueRejectGoal}
		}
		out = append(out, it)
	}
	return out, nil
}

// assignedItems lists the work assigned to a human viewer that they start or submit.
func (s *QueueService) assignedItems(ctx context.Context, v *queueView) ([]QueueItem, error) {
	if v.viewer.Kind != KindHuman {
		return nil, nil
	}
	var tasks []Task
	for _, st := range []TaskState{TaskAssigned, TaskInProgress} {
		ts, err := s.store.ListTaskHeads(ctx, TaskFilter{AssigneeID: v.viewer.ID, State: st, Limit: queueLimit})
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, ts...)
	}
	var out []QueueItem
	for i := range tasks {
		t := &tasks[i]
		acts := v.taskActs(t, ActStart, ActSubmit)
		if len(acts) == 0 {
			continue
		}
		why := "Assigned to you; start it when you begin"
		if t.State == TaskInProgress {
			why = "You are working on it; submit it for review when it is done"
		}
		out = append(out, QueueItem{Kind: QueueAssigned, TaskID: t.ID, GoalID: deref(t.GoalID), Subject: t.Title,
			Since: t.UpdatedAt, Why: why, Primary: acts[0], Secondary: []string{QueueOpen}})
	}
	return out, nil
}

// rolesFor returns the viewer's roles that alone pass check: the roles the item
// waits on, found by asking the rule itself about an agent holding only that role.
func (v *queueView) rolesFor(check func(*Agent) bool) []string {
	var out []string
	for _, r := range v.viewer.Roles {
		probe := &Agent{Kind: v.viewer.Kind, Name: v.viewer.Name, Roles: []string{r}}
		if check(probe) {
			out = append(out, r)
		}
	}
	return out
}

// policyWords says who an approve or verify policy names.
func policyWords(p Policy) string {
	switch p {
	case "", PolicyRunner, PolicyAny:
		return "a person other than the builder"
	}
	return "the " + p + " role"
}

// deref is *p, 0 for nil.
func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
