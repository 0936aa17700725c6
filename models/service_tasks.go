package models

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// ActionInput carries what an action needs besides the actor: the target agent of
// assign and reassign, the reason of a rejection, reopen, retry (guidance) or accept,
// the verifier's notes, and the builder's submission summary.
type ActionInput struct {
	Agent        string `json:"agent,omitempty"`
	Reason       string `json:"reason,omitempty"`
	Notes        string `json:"notes,omitempty"`
	Summary      string `json:"summary,omitempty"`
	FilesChanged string `json:"files_changed,omitempty"`
	// OutputHash is the verified output's SHA-384, when the caller (the runner) has
	// it; otherwise verifying looks it up in the task's passed attempts.
	OutputHash string `json:"-"`
	// Judge is the judge's report of the verified attempt, set with OutputHash.
	Judge *JudgeReport `json:"-"`
	// Answer answers a waiting task's question, or a blocked task's impossible claim
	// (ActAnswer).
	Answer string `json:"answer,omitempty"`
	// Brief is a blocked task's new brief (ActAmend).
	Brief string `json:"brief,omitempty"`
	// Question and Attempt are the question a run ended with and its attempt
	// (ActAsk, the runner's).
	Question string `json:"-"`
	Attempt  int    `json:"-"`
}

// TaskAction applies action to task id on behalf of actor, in one transaction with its
// event and side effects, and returns the task as it is afterwards.
func (s *TaskService) TaskAction(ctx context.Context, actor *Agent, id int64, act Action, in ActionInput) (*Task, error) {
	var out *Task
	err := s.store.InTx(ctx, func(tx Tx) error {
		t, err := tx.LockTask(ctx, id)
		if err != nil {
			return err
		}
		if err := s.Apply(ctx, tx, actor, t, act, in); err != nil {
			return err
		}
		out = t
		return nil
	})
	return out, err
}

// Apply is TaskAction inside a caller's transaction, on a task the caller has locked:
// it checks the transition and the actor's right to take it, changes t, saves it,
// appends the event and runs the side effects (goal state, ledger, escalation, inbox).
func (s *TaskService) Apply(ctx context.Context, tx Tx, actor *Agent, t *Task, act Action, in ActionInput) error {
	return s.Walk(ctx, tx, actor, t, Move{Act: act, In: in})
}

// Move is one transition of a Walk.
type Move struct {
	Act Action
	In  ActionInput
}

// Walk applies moves to t in order inside the caller's transaction, on a task the
// caller has locked — the runner walks assign → start when it claims, and submit →
// approve → verify when every check passed. Each move is checked and recorded (its
// event) as Apply would; the task row is written once before the first move with side
// effects (which read it back: the ledger, released dependents) and once at the end,
// rather than after every move, and the goal is moved along once.
func (s *TaskService) Walk(ctx context.Context, tx Tx, actor *Agent, t *Task, moves ...Move) error {
	buf := BufferEvents(tx) // the walk's events go out in one statement at the end
	if err := s.walk(ctx, buf, actor, t, moves); err != nil {
		return err
	}
	return buf.Flush(ctx)
}

func (s *TaskService) walk(ctx context.Context, tx Tx, actor *Agent, t *Task, moves []Move) error {
	// Lock the goal before anything changes: every walk takes the task's row, then its
	// goal's, so two walks cannot deadlock. (Events take the append lock only at the
	// commit, after every row lock.)
	syncsGoal, reopened := false, ""
	for _, m := range moves {
		syncsGoal = syncsGoal || (t.GoalID != nil && movesGoal(m.Act))
	}
	if syncsGoal {
		if _, err := tx.LockGoal(ctx, *t.GoalID); err != nil {
			return err
		}
	}
	for i, m := range moves {
		if m.Act == ActReopen && t.State == TaskVerified {
			reopened = fmt.Sprintf("task %d reopened: %s", t.ID, strings.TrimSpace(m.In.Reason))
		}
		after, err := s.transition(ctx, tx, actor, t, m.Act, m.In)
		if err != nil {
			return err
		}
		if len(after) == 0 && i < len(moves)-1 {
			continue
		}
		if err := tx.UpdateTask(ctx, t); err != nil {
			return err
		}
		for _, f := range after {
			if err := f(); err != nil {
				return err
			}
		}
	}
	if syncsGoal {
		return s.goals.syncGoal(ctx, tx, actor, *t.GoalID, reopened)
	}
	return nil
}

// transition checks one move, changes t in memory and appends its event; it returns
// the side effects to run once t is saved.
func (s *TaskService) transition(ctx context.Context, tx Tx, actor *Agent, t *Task, act Action, in ActionInput) ([]func() error, error) {
	if err := actor.scopeAllowsAction(t, act); err != nil {
		return nil, err
	}
	from := t.State
	to, err := CheckTransition(from, act)
	if err != nil {
		return nil, err
	}
	in.Reason = strings.TrimSpace(in.Reason)
	in.Notes = strings.TrimSpace(in.Notes)
	step, ok := actionSteps[act]
	if !ok {
		return nil, Errorf(EINVALID, "unknown action %q", act)
	}
	eff, err := step(s, ctx, tx, actor, t, in)
	if err != nil {
		return nil, err
	}
	hat, err := hatRules(ctx, tx, actor, t, act)
	if err != nil {
		return nil, err
	}
	if eff.to != "" {
		to = eff.to
	}
	t.State = to
	t.UpdatedAt = s.now()
	if to != TaskInProgress && to != TaskAssigned {
		t.LeaseOwner, t.LeaseUntil = "", nil
	}
	data := map[string]any{"from": from, "to": to, "action": act}
	for k, v := range map[string]string{"reason": in.Reason, "notes": in.Notes, "summary": in.Summary, "agent": in.Agent} {
		if v != "" {
			data[k] = v
		}
	}
	hat.addTo(data)
	if err := s.emit(ctx, tx, "task."+eventVerb(act), actor, &t.ID, t.GoalID, data); err != nil {
		return nil, err
	}
	return eff.after, nil
}

// movesGoal reports whether an action can change its goal's state. A goal's state
// follows from its tasks' states (NextGoalState): it turns active when a task starts,
// pending_verify when the last task is verified or cancelled, and active again on a
// reopen. Submitting, approving, rejecting, assigning, retrying or blocking a task
// never changes it, so those skip the goal's lock and recount.
func movesGoal(act Action) bool {
	switch act {
	case ActStart, ActVerify, ActAccept, ActCancel, ActReopen:
		return true
	}
	return false
}

// effect is what an action step asks Apply to do besides the table's transition.
type effect struct {
	to    TaskState      // overrides the table's target state (retry, reassign without assignee)
	after []func() error // run after the task and its event are saved
}

type actionStep func(s *TaskService, ctx context.Context, tx Tx, actor *Agent, t *Task, in ActionInput) (effect, error)

var actionSteps map[Action]actionStep

func init() {
	actionSteps = map[Action]actionStep{
		ActAssign:             (*TaskService).stepAssign,
		ActReassign:           (*TaskService).stepReassign,
		ActStart:              (*TaskService).stepStart,
		ActSubmit:             (*TaskService).stepSubmit,
		ActApprove:            (*TaskService).stepApprove,
		ActReject:             (*TaskService).stepReject,
		ActVerify:             (*TaskService).stepVerify,
		ActRejectVerification: (*TaskService).stepRejectVerification,
		ActReopen:             (*TaskService).stepReopen,
		ActCancel:             (*TaskService).stepCancel,
		ActBlock:              (*TaskService).stepBlock,
		ActRetry:              (*TaskService).stepRetry,
		ActAccept:             (*TaskService).stepAccept,
		ActAsk:                (*TaskService).stepAsk,
		ActAnswer:             (*TaskService).stepAnswer,
		ActAmend:              (*TaskService).stepAmend,
	}
}

func eventVerb(a Action) string {
	switch a {
	case ActRejectVerification:
		return "verification_rejected"
	case ActSubmit:
		return "submitted"
	case ActStart:
		return "started"
	case ActBlock:
		return "blocked"
	case ActReject:
		return "rejected"
	case ActRetry:
		return "retried"
	case ActReopen:
		return "reopened"
	case ActCancel:
		return "cancelled"
	case ActAssign:
		return "assigned"
	case ActReassign:
		return "reassigned"
	case ActApprove:
		return "approved"
	case ActVerify:
		return "verified"
	case ActAccept:
		return "accepted"
	case ActAsk:
		return "waiting"
	case ActAnswer:
		return "answered"
	case ActAmend:
		return "amended"
	}
	return string(a)
}

func requireReason(in ActionInput, what string) error {
	if in.Reason == "" {
		return &Error{Code: EINVALID, Message: what + " needs a reason", Fields: map[string]string{"reason": "must not be empty"}}
	}
	return nil
}

// targetAgent resolves the agent a task is being assigned to.
func targetAgent(ctx context.Context, tx Tx, t *Task, name string) (*Agent, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" {
		return nil, &Error{Code: EINVALID, Message: "an assignee is required", Fields: map[string]string{"agent": "is required"}}
	}
	a, err := tx.GetAgentByName(ctx, name)
	if ErrorCode(err) == ENOTFOUND {
		return nil, &Error{Code: EINVALID, Message: "unknown agent", Fields: map[string]string{"agent": "no agent named " + quote(name)}}
	}
	if err != nil {
		return nil, err
	}
	switch {
	case a.Kind == KindSystem:
		return nil, &Error{Code: EINVALID, Message: "the runner cannot be assigned work", Fields: map[string]string{"agent": "the runner checks work, it does not do it"}}
	case a.Disabled:
		return nil, &Error{Code: EINVALID, Message: "agent is disabled", Fields: map[string]string{"agent": quote(name) + " is disabled"}}
	case a.Kind == KindWorker && !a.HasRole(t.Role):
		return nil, &Error{Code: EINVALID, Message: "worker lacks the task's role", Fields: map[string]string{"agent": fmt.Sprintf("worker %q does not have role %q", name, t.Role)}}
	}
	return a, nil
}

func (s *TaskService) stepAssign(ctx context.Context, tx Tx, actor *Agent, t *Task, in ActionInput) (effect, error) {
	if !actor.IsRunner() {
		if err := requireAny(actor, "lead_or_exec", RoleLead, RoleExec); err != nil {
			return effect{}, err
		}
	}
	a, err := targetAgent(ctx, tx, t, in.Agent)
	if err != nil {
		return effect{}, err
	}
	t.AssigneeID = &a.ID
	return effect{}, nil
}

func (s *TaskService) stepReassign(ctx context.Context, tx Tx, actor *Agent, t *Task, in ActionInput) (effect, error) {
	if err := requireAny(actor, "lead_or_exec", RoleLead, RoleExec); err != nil {
		return effect{}, err
	}
	a, err := targetAgent(ctx, tx, t, in.Agent)
	if err != nil {
		return effect{}, err
	}
	t.AssigneeID = &a.ID
	t.AttemptsUsed = 0
	if in.Reason != "" {
		t.Reason = in.Reason
	}
	closeImpossible(t, actor, s.now(), "reassigned to "+a.Name)
	return effect{after: []func() error{func() error { return s.inbox.resolveInboxKeepingPrompt(ctx, tx, actor, t.ID, "reassigned to "+a.Name) }}}, nil
}

func (s *TaskService) stepStart(ctx context.Context, tx Tx, actor *Agent, t *Task, _ ActionInput) (effect, error) {
	if t.AssigneeID == nil {
		return effect{}, Errorf(ECONFLICT, "task %d has no assignee", t.ID)
	}
	if !actor.IsRunner() && actor.ID != *t.AssigneeID {
		return effect{}, Forbidden("assignee_only", "only the assignee may start this task")
	}
	if err := dependenciesMet(ctx, tx, t); err != nil {
		return effect{}, err
	}
	if err := advisoryHold(ctx, tx, t); err != nil {
		return effect{}, err
	}
	t.BuilderID = ptr(*t.AssigneeID)
	return effect{}, nil
}

// dependenciesMet returns ECONFLICT naming the first dependency not yet verified.
// Only a verified dependency releases a task: a cancelled one does not, because its
// output was never checked.
func dependenciesMet(ctx context.Context, tx Tx, t *Task) error {
	if len(t.DependsOn) == 0 {
		return nil
	}
	deps, err := tx.GetTasks(ctx, t.DependsOn)
	if err != nil {
		return err
	}
	for _, d := range deps {
		if d.State != TaskVerified {
			return &Error{Code: ECONFLICT, Rule: RuleWaitsForSteps, Message: fmt.Sprintf("task %d waits for task %d, which is %s", t.ID, d.ID, d.State), State: string(t.State)}
		}
	}
	return nil
}

func (s *TaskService) stepSubmit(ctx context.Context, tx Tx, actor *Agent, t *Task, in ActionInput) (effect, error) {
	if !actor.IsRunner() && (t.BuilderID == nil || actor.ID != *t.BuilderID) {
		if pilot, err := isPilot(ctx, tx, actor, t); err != nil || !pilot {
			return effect{}, orRefuse(err, Forbidden("builder_only", "only the builder (or the pilot of a minion task) may submit this task for review"))
		}
	}
	t.Summary, t.FilesChanged = in.Summary, in.FilesChanged
	return effect{}, nil
}

func (s *TaskService) stepApprove(ctx context.Context, tx Tx, actor *Agent, t *Task, _ ActionInput) (effect, error) {
	if err := mayAct(ctx, tx, actor, t, DutyApprove); err != nil {
		return effect{}, err
	}
	t.ApproverID = &actor.ID
	return effect{}, nil
}

func (s *TaskService) stepReject(ctx context.Context, tx Tx, actor *Agent, t *Task, in ActionInput) (effect, error) {
	if err := requireReason(in, "a rejection"); err != nil {
		return effect{}, err
	}
	if err := mayAct(ctx, tx, actor, t, DutyApprove); err != nil {
		return effect{}, err
	}
	t.Reason, t.ApproverID, t.AttemptsUsed = in.Reason, nil, 0
	t.AssigneeID = t.BuilderID
	return effect{}, nil
}

func (s *TaskService) stepVerify(ctx context.Context, tx Tx, actor *Agent, t *Task, in ActionInput) (effect, error) {
	if err := mayAct(ctx, tx, actor, t, DutyVerify); err != nil {
		return effect{}, err
	}
	now := s.now()
	t.VerifierID, t.Notes, t.VerifiedAt = &actor.ID, in.Notes, &now
	eff := effect{after: []func() error{
		func() error { return s.ledger.writeTaskComplete(ctx, tx, t, actor, in.OutputHash, in.Judge) },
		func() error { return s.releaseDependents(ctx, tx, actor, t) },
	}}
	if t.Rejections >= 2 {
		// It was escalated (see stepRejectVerification); verified work settles that.
		eff.after = append(eff.after, func() error {
			return s.inbox.resolveInbox(ctx, tx, actor, t.ID, InboxEscalation, "verified by "+actor.Name)
		})
	}
	return eff, nil
}

func (s *TaskService) stepRejectVerification(ctx context.Context, tx Tx, actor *Agent, t *Task, in ActionInput) (effect, error) {
	if err := requireReason(in, "a verification rejection"); err != nil {
		return effect{}, err
	}
	if err := mayAct(ctx, tx, actor, t, DutyVerify); err != nil {
		return effect{}, err
	}
	t.Rejections++
	t.Reason, t.ApproverID, t.AttemptsUsed = in.Reason, nil, 0
	t.AssigneeID = t.BuilderID
	if t.Rejections != 2 {
		return effect{}, nil
	}
	return effect{after: []func() error{func() error { return s.escalate(ctx, tx, actor, t, in.Reason) }}}, nil
}

// escalate puts a task rejected twice by verifiers in front of the lead.
func (s *TaskService) escalate(ctx context.Context, tx Tx, actor *Agent, t *Task, reason string) error {
	payload, _ := json.Marshal(map[string]any{"task_id": t.ID, "rejections": t.Rejections, "last_reason": reason, "verifier": actor.Name})
	item := &InboxItem{Kind: InboxEscalation, TaskID: t.ID, GoalID: t.GoalID, CreatedAt: s.now(), Payload: payload,
		Title: fmt.Sprintf("Task %d rejected twice by verifiers (last by %s): escalation required", t.ID, actor.Name)}
	if err := tx.CreateInboxItem(ctx, item); err != nil {
		return err
	}
	return s.emit(ctx, tx, "task.escalated", actor, &t.ID, t.GoalID, map[string]any{"rejections": t.Rejections, "reason": reason, "inbox_id": item.ID})
}

func (s *TaskService) stepReopen(ctx context.Context, tx Tx, actor *Agent, t *Task, in ActionInput) (effect, error) {
	if err := requireAny(actor, "lead_only", RoleLead); err != nil {
		return effect{}, err
	}
	if err := requireReason(in, "reopening a task"); err != nil {
		return effect{}, err
	}
	if t.BuilderID == nil {
		return effect{}, Errorf(ECONFLICT, "task %d has no builder to reopen it for", t.ID)
	}
	t.AssigneeID = ptr(*t.BuilderID)
	t.ApproverID, t.VerifierID, t.VerifiedAt, t.Notes, t.Override = nil, nil, nil, "", false
	t.Reason, t.AttemptsUsed = in.Reason, 0
	// Reopening a stale task is the lead confirming its drift: the completion is
	// withdrawn for that reason, and the work is fingerprinted again when it passes.
	why := RevokedReopened
	if t.Drift != nil {
		why = RevokedDrift
	}
	t.Fingerprint, t.Drift = nil, nil
	return effect{after: []func() error{
		func() error { return s.ledger.revokeTask(ctx, tx, actor, t, why, in.Reason) },
		func() error { return s.inbox.resolveInbox(ctx, tx, actor, t.ID, InboxDrift, "reopened: "+in.Reason) },
	}}, nil
}

func (s *TaskService) stepCancel(ctx context.Context, tx Tx, actor *Agent, t *Task, in ActionInput) (effect, error) {
	if actor.ID != t.CreatorID {
		if err := requireAny(actor, "lead_exec_or_creator", RoleLead, RoleExec); err != nil {
			return effect{}, err
		}
	}
	if in.Reason != "" {
		t.Reason = in.Reason
	}
	closeImpossible(t, actor, s.now(), "cancelled the task")
	after := []func() error{func() error { return s.inbox.resolveInbox(ctx, tx, actor, t.ID, "", "cancelled") }}
	if t.ReviewOf != nil {
		// The reviewed task waits for this fix: it goes to a person instead.
		after = append(after, func() error { return s.reviewFixCancelled(ctx, tx, actor, t) })
	}
	return effect{after: after}, nil
}

func (s *TaskService) stepBlock(ctx context.Context, tx Tx, actor *Agent, t *Task, _ ActionInput) (effect, error) {
	if !actor.IsRunner() {
		return effect{}, Forbidden("runner_only", "only the runner blocks a task, when its attempts are exhausted")
	}
	return effect{}, nil
}

func (s *TaskService) stepRetry(ctx context.Context, tx Tx, actor *Agent, t *Task, in ActionInput) (effect, error) {
	if err := requireAny(actor, "lead_or_exec", RoleExec, RoleLead); err != nil {
		return effect{}, err
	}
	resolution := "retried: " + in.Reason
	if in.Reason == "" {
		// A task blocked as not ready failed no check: checking again needs no
		// guidance, and the guidance it had stays.
		notReady, err := BlockedNotReady(ctx, tx, t.ID)
		if err != nil {
			return effect{}, err
		}
		if !notReady {
			return effect{}, &Error{Code: EINVALID, Message: "a retry needs guidance for the worker", Fields: map[string]string{"reason": "must not be empty"}}
		}
		resolution = "checked again"
	} else {
		t.Reason = in.Reason
	}
	closeImpossible(t, actor, s.now(), "retried it with guidance: "+in.Reason)
	t.AttemptsUsed = 0
	eff := effect{after: []func() error{func() error { return s.inbox.resolveInbox(ctx, tx, actor, t.ID, "", resolution) }}}
	if t.AssigneeID == nil {
		eff.to = TaskPending
	}
	return eff, nil
}

func (s *TaskService) stepAccept(ctx context.Context, tx Tx, actor *Agent, t *Task, in ActionInput) (effect, error) {
	if err := requireAny(actor, "exec_only", RoleExec); err != nil {
		return effect{}, err
	}
	if err := requireReason(in, "accepting blocked work"); err != nil {
		return effect{}, err
	}
	if t.BuilderID != nil && *t.BuilderID == actor.ID {
		return effect{}, Forbidden("verifier_not_builder", "the builder cannot accept their own work")
	}
	if t.OpenImpossible() != nil {
		return effect{}, Errorf(ECONFLICT, "task %d's worker said it cannot be done as specified: nothing was built to accept; answer, amend, reassign or cancel it", t.ID)
	}
	now := s.now()
	t.VerifierID, t.Notes, t.VerifiedAt, t.Override = &actor.ID, in.Reason, &now, true
	return effect{after: []func() error{
		func() error { return s.inbox.resolveInbox(ctx, tx, actor, t.ID, "", "accepted: "+in.Reason) },
		func() error { return s.ledger.writeTaskComplete(ctx, tx, t, actor, "", nil) },
		func() error { return s.releaseDependents(ctx, tx, actor, t) },
	}}, nil
}

// releaseDependents announces the tasks whose last dependency t was.
func (s *TaskService) releaseDependents(ctx context.Context, tx Tx, actor *Agent, t *Task) error {
	deps, err := tx.Dependents(ctx, t.ID)
	if err != nil {
		return err
	}
	for i := range deps {
		d := &deps[i]
		if d.State != TaskPending && d.State != TaskAssigned {
			continue
		}
		if dependenciesMet(ctx, tx, d) != nil {
			continue
		}
		if err := s.emit(ctx, tx, "task.released", actor, &d.ID, d.GoalID, map[string]any{"after": t.ID, "role": d.Role}); err != nil {
			return err
		}
	}
	return nil
}
