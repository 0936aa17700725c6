package models

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// CanLead reports whether a holds the lead role: verifies and rejects goals and takes
// the escalations. VerifyGoal and RejectGoal enforce the same rule (requireLead).
func CanLead(a *Agent) bool { return requireLead(a) == nil }

// requireLead refuses (EFORBIDDEN, lead_only) an actor without the lead role.
func requireLead(a *Agent) error { return requireAny(a, "lead_only", RoleLead) }

// inboxItems lists the open inbox items the viewer may act on, with their tasks.
func (s *QueueService) inboxItems(ctx context.Context, v *queueView) ([]QueueItem, error) {
	items, err := s.store.ListInbox(ctx, InboxFilter{Limit: queueLimit})
	if err != nil || len(items) == 0 {
		return nil, err
	}
	ids := make([]int64, 0, len(items))
	for _, it := range items {
		ids = append(ids, it.TaskID)
	}
	tasks, err := s.store.GetTasks(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := map[int64]*Task{}
	for i := range tasks {
		byID[tasks[i].ID] = &tasks[i]
	}
	var out []QueueItem
	for i := range items {
		t := byID[items[i].TaskID]
		if t == nil {
			continue
		}
		if it, ok := v.inboxItem(&items[i], t); ok {
			out = append(out, it)
		}
	}
	return out, nil
}

// inboxItem is an open inbox item's queue item when the viewer may act on it.
func (v *queueView) inboxItem(in *InboxItem, t *Task) (QueueItem, bool) {
	it := QueueItem{Kind: in.Kind, TaskID: t.ID, GoalID: deref(t.GoalID), InboxID: in.ID, Subject: t.Title, Since: in.CreatedAt}
	switch in.Kind {
	case InboxBlocked:
		return v.blockedItem(it, in, t)
	case InboxQuestion:
		it.Why = "The worker asks: " + openQuestion(t, in)
		return v.withTaskActs(it, t, "reason", true, ActAnswer, ActCancel)
	case InboxDrift:
		it.Why = "What its verification covered changed after it was verified; a lead reopens it or a recheck clears it"
		return v.withTaskActs(it, t, "reason", true, ActReopen, QueueOpen)
	case InboxEscalation:
		it.Why = "Verifiers rejected it twice; it is escalated to a lead to decide what happens to it"
		if !CanLead(v.viewer) {
			return it, false
		}
		it.Roles, it.Primary, it.Secondary = []string{RoleLead}, QueueOpen, v.taskActs(t, ActCancel)
		return it, true
	}
	if !CanResolveInbox(v.viewer) {
		return it, false
	}
	it.Roles = v.rolesFor(CanResolveInbox)
	switch in.Kind {
	case InboxAdvisory:
		it.Why = "Advisory work: no automated check judged its output, so a person looks at it"
		it.Primary, it.Secondary = QueueOpen, []string{QueueDismiss}
	case InboxAdvisoryPrompt:
		it.Why = "An advisory task waits before it is delegated: proceed as advisory, make it verifiable or cancel it"
		it.Primary, it.Secondary = QueueProceed, []string{QueueMakeVerifiable, QueueAdvisoryCancel}
	case InboxAgentPaused:
		it.Why = in.Title
		it.Primary, it.Secondary = QueueOpen, []string{QueueDismiss}
		var p AgentPausedPayload
		if json.Unmarshal(in.Payload, &p) == nil {
			it.AgentID = p.AgentID
			it.Why = fmt.Sprintf("Agent %s's command could not run (exit %d): the agent is paused until an admin enables it", p.Agent, p.ExitCode)
		}
	default: // budget warnings and any later notice
		it.Why = in.Title
		it.Primary, it.Secondary = QueueOpen, []string{QueueDismiss}
	}
	return it, true
}

// blockedItem is a blocked task's item: retry with guidance (check again, without,
// when it was not ready or a budget stopped it), reassign, accept, cancel; for an
// impossible claim, answer first and no accept.
func (v *queueView) blockedItem(it QueueItem, in *InboxItem, t *Task) (QueueItem, bool) {
	var p BlockedPayload
	_ = json.Unmarshal(in.Payload, &p)
	it.Why, it.TextRequired = "Its attempts ran out", true
	if n := len(p.Attempts); n > 0 {
		last := p.Attempts[n-1]
		switch last.Stage {
		case StageReadiness:
			it.Why, it.TextRequired = "It is not ready to run: "+strings.Join(p.Missing, "; "), false
		case StageBudget:
			it.Why, it.TextRequired = "A budget stopped it before it finished", false
		case StageQuestion:
			it.Why = "Its question was never answered"
		case StageImpossible:
			// The worker's claim (impossible.go): answered, or the task amended (on its
			// page), reassigned or cancelled; nothing to accept.
			it.Why = "Its worker says it cannot be done as specified: " + last.Failure
			it, ok := v.withTaskActs(it, t, "reason", true, ActAnswer, ActRetry, ActReassign, ActCancel)
			it.Secondary = append(it.Secondary, QueueOpen)
			return it, ok
		default:
			it.Why = fmt.Sprintf("Blocked after %d attempt(s); the last failed at the %s check", countAttempts(p.Attempts), last.Stage)
		}
	}
	it, ok := v.withTaskActs(it, t, "reason", it.TextRequired, ActRetry, ActReassign, ActAccept, ActCancel)
	it.Secondary = append(it.Secondary, QueueOpen)
	return it, ok
}

// withTaskActs sets the item's actions to those of acts the viewer may take (the
// first is the primary; a non-task action in acts is kept as it is), and its roles to
// the viewer's roles that allow the primary; false when the viewer may take none.
func (v *queueView) withTaskActs(it QueueItem, t *Task, text string, required bool, acts ...Action) (QueueItem, bool) {
	var mine []string
	for _, a := range acts {
		if _, isTask := TaskTransitions[a]; !isTask || v.may(v.viewer, t, a) {
			mine = append(mine, string(a))
		}
	}
	if len(mine) == 0 || !isTaskAction(mine[0]) {
		return it, false
	}
	it.Primary, it.Secondary = mine[0], mine[1:]
	it.NeedsText, it.TextRequired = text, required
	it.Roles = v.rolesFor(func(a *Agent) bool { return v.may(a, t, Action(it.Primary)) })
	return it, true
}

// isTaskAction reports whether name is a task action.
func isTaskAction(name string) bool {
	_, ok := TaskTransitions[Action(name)]
	return ok
}

// countAttempts counts the attempts of a blocked payload that ran (not readiness).
func countAttempts(as []BlockedAttempt) int {
	n := 0
	for _, a := range as {
		if a.Stage != StageReadiness && a.Stage != StageBudget {
			n++
		}
	}
	return n
}

// openQuestion is t's open question, or the item's title without its prefix.
func openQuestion(t *Task, in *InboxItem) string {
	if q := t.OpenQuestion(); q != nil {
		return q.Text
	}
	_, q, ok := strings.Cut(in.Title, "asks: ")
	if !ok {
		return in.Title
	}
	return q
}

// Waiting says who must act on a task next, for the task page's "Waiting on".
type Waiting struct {
	// Action is the action a person takes next.
	Action Action `json:"action"`
	// Roles are the roles that alone allow it (empty: it is one person's, such as the
	// assignee's, or any person's but the builder's).
	Roles []string `json:"roles,omitempty"`
	// Names are the enabled people who may take it.
	Names []string `json:"names"`
}

// nextHumanAction is the action a person takes next on a task in state st.
var nextHumanAction = map[TaskState]Action{
	TaskReview: ActApprove, TaskCompleted: ActVerify, TaskBlocked: ActRetry,
	TaskWaiting: ActAnswer, TaskAssigned: ActStart, TaskInProgress: ActSubmit,
}

// WaitingFor says who must act on t next when that is a person: the next action of
// its state and the roles and people MayTake lets take it. nil when no person may
// (the runner or a worker acts next, or the task is done).
func (s *QueueService) WaitingFor(ctx context.Context, t *Task) (*Waiting, error) {
	act, ok := nextHumanAction[t.State]
	if !ok {
		return nil, nil
	}
	if t.OpenImpossible() != nil {
		act = ActAnswer // its worker's claim waits for an answer (impossible.go)
	}
	v, err := s.view(ctx, nil)
	if err != nil {
		return nil, err
	}
	w := &Waiting{Action: act, Names: []string{}}
	candidates := []string{t.Approve, t.Verify, RoleLead, RoleExec}
	for i := range v.list {
		a := &v.list[i]
		candidates = append(candidates, a.Roles...)
		if a.Kind == KindHuman && !a.Disabled && v.may(a, t, act) {
			w.Names = append(w.Names, a.Name)
		}
	}
	seen := map[string]bool{}
	for _, r := range candidates {
		if r != "" && !seen[r] && v.may(&Agent{Kind: KindHuman, Roles: []string{r}}, t, act) {
			w.Roles = append(w.Roles, r)
		}
		seen[r] = true
	}
	runner := &Agent{Name: RunnerAgentName, Kind: KindSystem}
	if len(w.Names) == 0 && (act == ActStart || act == ActSubmit || v.may(runner, t, act)) {
		return nil, nil // a worker's or the runner's turn
	}
	return w, nil
}
