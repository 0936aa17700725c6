package models

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/models/contract"
)

// OutcomeImpossible is the outcome of an attempt whose worker said the task cannot be
// done as specified (a last line `IMPOSSIBLE: <reason>`, or the signal file's
// impossible field). It is neither a pass nor a failure: the task is not revised but
// goes to a person with the reason.
const OutcomeImpossible = "impossible"

// StageImpossible is the stage of an attempt, and of the task's block, that ended
// because its worker said the task is impossible as specified.
const StageImpossible = "impossible"

// ActAmend: a person replaces a blocked task's brief and sends it back to its
// assignee, the attempt budget full again. It answers an impossible claim by changing
// the task rather than the worker's mind, and serves any other blocked task too.
const ActAmend Action = "amend"

// BlockImpossible is the kind of a block whose worker said the task is impossible
// (stage impossible): the worker's honest word, neither a failure of its work nor of
// the machinery, so a scorecard counts it apart (Scorecard.Impossible) and not as a
// block.
const BlockImpossible = "impossible"

// An impossible claim is the worker's word only. The runner takes it as it is, runs no
// check on the attempt, lands nothing and writes no task.complete; it does not revise
// the attempt or ask the triage either, since a second worker told the same brief
// would be in the same place. The task is blocked at once, the block's stage
// impossible, with an inbox item of kind blocked carrying the reason: the blocked
// state already holds a task for a person with its evidence, deadlines and forms, and
// only the actions differ. A lead or an exec (or the task's creator) then answers the
// claim (ActAnswer: back to the assignee, claim and answer in the next brief, as a
// question's answer), amends the task (ActAmend: a new brief), reassigns or cancels
// it. Accepting is refused while the claim is open: nothing was built to accept.
//
// The claim is kept with the task's questions (Question.Impossible), so that its
// answer reaches the next brief the way a question's does and needs no storage of its
// own; OpenQuestion never returns it.

// OpenImpossible returns the impossible claim of a task blocked on one and not yet
// answered or otherwise resolved; nil otherwise.
func (t *Task) OpenImpossible() *Question {
	if n := len(t.Questions); t.State == TaskBlocked && n > 0 {
		if q := &t.Questions[n-1]; q.Impossible && q.AnsweredAt == nil {
			return q
		}
	}
	return nil
}

// BlockImpossibleTask blocks t, in tx, because the worker of attempt said it cannot be
// done as specified for reason: the claim kept on the task, the task.impossible event,
// and the block (BlockTask: inbox item, task.blocked ledger entry) whose last entry is
// the claim at stage impossible, after round (the failures of the task's current round
// before it, oldest first). Only the runner records a claim; nothing is verified.
func (s *AttemptService) BlockImpossibleTask(ctx context.Context, tx Tx, runner *Agent, t *Task, attempt int, reason string, round []BlockedAttempt) error {
	if !runner.IsRunner() {
		return Forbidden("runner_only", "only the runner records a worker's impossible claim")
	}
	reason, err := checkQuestion("reason", reason)
	if err != nil {
		return err
	}
	t.Questions = append(t.Questions, Question{Text: reason, Attempt: attempt, AskedAt: s.now(), Impossible: true})
	if err := s.emit(ctx, tx, "task.impossible", runner, &t.ID, t.GoalID, map[string]any{"attempt": attempt, "reason": reason}); err != nil {
		return err
	}
	return s.BlockTask(ctx, tx, runner, t, append(round, BlockedAttempt{Attempt: attempt, Stage: StageImpossible, Failure: reason}))
}

// impossibleTitle is the inbox title of a block whose last entry is an impossible
// claim.
func impossibleTitle(taskID int64, reason string) string {
	return contract.Truncate(fmt.Sprintf("Task %d cannot be done as specified, its worker says: %s", taskID, reason), 300)
}

// stepAnswerImpossible answers the open impossible claim of blocked task t: the
// answer goes into its next brief beside the claim, the task back to its assignee
// (pending without one) with its attempt budget full again.
func (s *TaskService) stepAnswerImpossible(ctx context.Context, tx Tx, actor *Agent, t *Task, answer string) (effect, error) {
	q := t.OpenImpossible()
	if q == nil {
		return effect{}, Errorf(ECONFLICT, "task %d is blocked, but not on an impossible claim: retry it with guidance instead", t.ID)
	}
	now := s.now()
	q.Answer, q.AnsweredBy, q.AnsweredAt = answer, actor.Name, &now
	t.AttemptsUsed = 0
	claim := q.Text
	eff := effect{after: []func() error{
		func() error {
			return s.inbox.resolveInbox(ctx, tx, actor, t.ID, InboxBlocked, "answered by "+actor.Name)
		},
		func() error {
			return s.emit(ctx, tx, "impossible.answered", actor, &t.ID, t.GoalID, map[string]any{"reason": claim, "answer": answer})
		},
	}}
	if t.AssigneeID == nil {
		eff.to = TaskPending
	}
	return eff, nil
}

// stepAmend replaces blocked task t's brief with in.Brief (and its guidance with
// in.Reason, when given) and sends it back to its assignee with its attempt budget
// full again; an open impossible claim is closed by it.
func (s *TaskService) stepAmend(ctx context.Context, tx Tx, actor *Agent, t *Task, in ActionInput) (effect, error) {
	if actor.ID != t.CreatorID {
		if err := requireAny(actor, "lead_exec_or_creator", RoleLead, RoleExec); err != nil {
			return effect{}, err
		}
	}
	brief := strings.TrimSpace(in.Brief)
	switch {
	case brief == "":
		return effect{}, &Error{Code: EINVALID, Message: "an amendment needs the new brief", Fields: map[string]string{"brief": "must not be empty"}}
	case len(brief) > 100000:
		return effect{}, &Error{Code: EINVALID, Message: "validation failed", Fields: map[string]string{"brief": "must be at most 100000 characters"}}
	case brief == strings.TrimSpace(t.Brief):
		return effect{}, &Error{Code: EINVALID, Message: "an amendment must change the brief", Fields: map[string]string{"brief": "is the same as the task's brief"}}
	}
	old := t.Brief
	t.Brief, t.AttemptsUsed = brief, 0
	if in.Reason != "" {
		t.Reason = in.Reason
	}
	closeImpossible(t, actor, s.now(), "amended the task's brief")
	eff := effect{after: []func() error{
		func() error { return s.inbox.resolveInbox(ctx, tx, actor, t.ID, "", "amended by "+actor.Name) },
		func() error {
			return s.emit(ctx, tx, "task.brief_amended", actor, &t.ID, t.GoalID, map[string]any{
				"old_brief": contract.Truncate(old, 2000), "brief": contract.Truncate(brief, 2000)})
		},
	}}
	if t.AssigneeID == nil {
		eff.to = TaskPending
	}
	return eff, nil
}

// closeImpossible marks t's open impossible claim as settled by what actor did (a
// retry, a reassignment, an amendment, a cancellation), so that the task, back at
// work or gone, has no claim left open; the note takes the answer's place.
func closeImpossible(t *Task, actor *Agent, now time.Time, note string) {
	if q := t.OpenImpossible(); q != nil {
		q.Answer, q.AnsweredBy, q.AnsweredAt = note, actor.Name, &now
	}
}
