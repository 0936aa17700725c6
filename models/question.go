package models

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/models/contract"
)

// TaskWaiting: the worker asked a person a question; the task waits for the answer,
// its lease released and no attempt used.
const TaskWaiting TaskState = "waiting"

// Question actions.
const (
	// ActAsk: the runner parks a task whose run ended with a question (runner only).
	ActAsk Action = "ask"
	// ActAnswer: a person answers the waiting task's question; it goes back to its
	// assignee, the question and answer in the next brief.
	ActAnswer Action = "answer"
)

// InboxQuestion: a worker's question waiting for a person's answer.
const InboxQuestion = "question"

// OutcomeQuestion is the outcome of an attempt whose run ended with a question: it
// is neither a pass nor a failure and uses no attempt.
const OutcomeQuestion = "question"

// StageQuestion is the stage of a task blocked because its question was never
// answered.
const StageQuestion = "question"

// MaxQuestionBytes bounds a question and an answer.
const MaxQuestionBytes = 4000

// Question is one question a worker asked about its task, and its answer.
type Question struct {
	Text       string     `json:"text"`
	Attempt    int        `json:"attempt"` // the attempt that asked
	AskedAt    time.Time  `json:"asked_at"`
	Answer     string     `json:"answer,omitempty"`
	AnsweredBy string     `json:"answered_by,omitempty"`
	AnsweredAt *time.Time `json:"answered_at,omitempty"`
	// Impossible marks the worker's claim that the task cannot be done as specified
	// (impossible.go), Text its reason: answered like a question, but never a
	// question the task waits on.
	Impossible bool `json:"impossible,omitempty"`
}

// OpenQuestion returns the task's unanswered question, nil when there is none. An
// impossible claim is not one (see OpenImpossible).
func (t *Task) OpenQuestion() *Question {
	if n := len(t.Questions); n > 0 && t.Questions[n-1].AnsweredAt == nil && !t.Questions[n-1].Impossible {
		return &t.Questions[n-1]
	}
	return nil
}

// checkQuestion trims text and refuses an empty or oversized question or answer.
func checkQuestion(field, text string) (string, error) {
	text = strings.TrimSpace(text)
	switch {
	case text == "":
		return "", &Error{Code: EINVALID, Message: "validation failed", Fields: map[string]string{field: "must not be empty"}}
	case len(text) > MaxQuestionBytes:
		return "", &Error{Code: EINVALID, Message: "validation failed", Fields: map[string]string{field: fmt.Sprintf("must be at most %d bytes", MaxQuestionBytes)}}
	}
	return text, nil
}

// AskQuestion records the question a worker asks during its run (MCP ask_question,
// POST /tasks/{id}/questions), through its attempt token or as the task's builder;
// when the run ends the runner parks the task waiting for the answer. attempt is the
// asking attempt's number (the token's).
func (s *TaskService) AskQuestion(ctx context.Context, actor *Agent, taskID int64, text string) (*Task, error) {
	text, err := checkQuestion("question", text)
	if err != nil {
		return nil, err
	}
	var out *Task
	err = s.store.InTx(ctx, func(tx Tx) error {
		t, err := tx.LockTask(ctx, taskID)
		if err != nil {
			return err
		}
		switch {
		case actor.Scope != nil && actor.Scope.TaskID != t.ID:
			return scopeError("ask about another task")
		case actor.Scope == nil && (t.BuilderID == nil || *t.BuilderID != actor.ID):
			return Forbidden("builder_only", "only the worker doing the task asks about it")
		}
		if t.State != TaskInProgress {
			return &Error{Code: ECONFLICT, Message: "only a task in progress can ask a question", State: string(t.State)}
		}
		if t.OpenQuestion() != nil {
			return Errorf(ECONFLICT, "task %d already has a question waiting for its answer", t.ID)
		}
		attempt := 0
		if actor.Scope != nil {
			attempt = actor.Scope.Attempt
		}
		t.Questions = append(t.Questions, Question{Text: text, Attempt: attempt, AskedAt: s.now()})
		if err := tx.UpdateTask(ctx, t); err != nil {
			return err
		}
		out = t
		return s.emit(ctx, tx, "question.recorded", actor, &t.ID, t.GoalID, map[string]any{"question": text, "attempt": attempt})
	})
	return out, err
}

// stepAsk parks a task whose run ended with a question: its lease released, an inbox
// item for the person who answers, question.asked. in.Question is the question when
// the run asked it on its last output line; one recorded during the run (AskQuestion)
// is used otherwise.
func (s *TaskService) stepAsk(ctx context.Context, tx Tx, actor *Agent, t *Task, in ActionInput) (effect, error) {
	if !actor.IsRunner() {
		return effect{}, Forbidden("runner_only", "only the runner parks a task on its question")
	}
	q := t.OpenQuestion()
	if q == nil {
		text, err := checkQuestion("question", in.Question)
		if err != nil {
			return effect{}, err
		}
		t.Questions = append(t.Questions, Question{Text: text, Attempt: in.Attempt, AskedAt: s.now()})
		q = &t.Questions[len(t.Questions)-1]
	}
	t.LeaseOwner, t.LeaseUntil = "", nil
	text := q.Text
	return effect{after: []func() error{func() error {
		item := &InboxItem{Kind: InboxQuestion, TaskID: t.ID, GoalID: t.GoalID, CreatedAt: s.now(),
			Title: contract.Truncate(fmt.Sprintf("Task %d asks: %s", t.ID, text), 300)}
		if err := tx.CreateInboxItem(ctx, item); err != nil {
			return err
		}
		return s.emit(ctx, tx, "question.asked", actor, &t.ID, t.GoalID, map[string]any{"question": text, "inbox_id": item.ID})
	}}}, nil
}

// stepAnswer answers a waiting task's question (a lead, an exec or the task's
// creator): the task goes back to its assignee, the question and answer in its next
// brief, no attempt used. On a task blocked on an impossible claim it answers the
// claim (stepAnswerImpossible).
func (s *TaskService) stepAnswer(ctx context.Context, tx Tx, actor *Agent, t *Task, in ActionInput) (effect, error) {
	if actor.ID != t.CreatorID {
		if err := requireAny(actor, "lead_exec_or_creator", RoleLead, RoleExec); err != nil {
			return effect{}, err
		}
	}
	answer, err := checkQuestion("answer", in.Answer)
	if err != nil {
		return effect{}, err
	}
	if t.State == TaskBlocked {
		return s.stepAnswerImpossible(ctx, tx, actor, t, answer)
	}
	q := t.OpenQuestion()
	if q == nil {
		return effect{}, Errorf(ECONFLICT, "task %d has no question waiting for an answer", t.ID)
	}
	now := s.now()
	q.Answer, q.AnsweredBy, q.AnsweredAt = answer, actor.Name, &now
	question := q.Text
	return effect{after: []func() error{
		func() error {
			return s.inbox.resolveInbox(ctx, tx, actor, t.ID, InboxQuestion, "answered by "+actor.Name)
		},
		func() error {
			return s.emit(ctx, tx, "question.answered", actor, &t.ID, t.GoalID, map[string]any{"question": question, "answer": answer})
		},
	}}, nil
}
