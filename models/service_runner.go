package models

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/countersign/countersign/models/contract"
)

// RunnerPass moves a task whose attempt passed every check on, inside the runner's
// transaction: submitted for review, then approved and verified by the runner where
// the task's policies leave those steps to it; a step that belongs to a person stops
// the walk there. outputHash is the verified output's SHA-384, recorded in the
// task.complete entry. For an advisory task the output also lands in the inbox for a
// look.
func (s *AttemptService) RunnerPass(ctx context.Context, tx Tx, runner *Agent, t *Task, summary, outputHash string, advisory bool) error {
	return s.RunnerPassJudged(ctx, tx, runner, t, summary, outputHash, nil, advisory)
}

// RunnerPassJudged is RunnerPass with the judge's report of the passing attempt, whose
// counts the task.complete entry carries.
func (s *AttemptService) RunnerPassJudged(ctx context.Context, tx Tx, runner *Agent, t *Task, summary, outputHash string, judge *JudgeReport, advisory bool) error {
	moves := []Move{{Act: ActSubmit, In: ActionInput{Summary: summary}}}
	if runnerOwns(t.Approve) {
		moves = append(moves, Move{Act: ActApprove})
		if runnerOwns(t.Verify) {
			moves = append(moves, Move{Act: ActVerify, In: ActionInput{Notes: "every check of the contract passed", OutputHash: outputHash, Judge: judge}})
		}
	}
	if err := s.tasks.Walk(ctx, tx, runner, t, moves...); err != nil {
		return err
	}
	if !advisory {
		return nil
	}
	payload, _ := json.Marshal(map[string]any{"task_id": t.ID, "summary": summary})
	item := &InboxItem{Kind: InboxAdvisory, TaskID: t.ID, GoalID: t.GoalID, Payload: payload, CreatedAt: s.now(),
		Title: fmt.Sprintf("Advisory output of task %d to look at: %s", t.ID, t.Title)}
	if err := tx.CreateInboxItem(ctx, item); err != nil {
		return err
	}
	return s.emit(ctx, tx, "inbox.created", runner, &t.ID, t.GoalID, map[string]any{"inbox_id": item.ID, "kind": item.Kind})
}

func runnerOwns(p Policy) bool { return p == "" || p == PolicyRunner }

// BlockTask blocks a task whose attempts are exhausted, inside the runner's
// transaction: the task waits in the inbox with the full evidence, and the
// task.blocked entry goes to the outbox. The payload's completion_spec names the
// paths as the worker was told them, {task_id} expanded.
func (s *AttemptService) BlockTask(ctx context.Context, tx Tx, runner *Agent, t *Task, attempts []BlockedAttempt) error {
	agentName, err := assigneeName(ctx, tx, t)
	if err != nil {
		return err
	}
	if err := s.tasks.Apply(ctx, tx, runner, t, ActBlock, ActionInput{}); err != nil {
		return err
	}
	p := BlockedPayload{Type: LedgerTaskBlocked, TaskID: t.ID, WorkflowInstanceID: t.RunID, StepNum: t.StepNum,
		Agent: agentName, CompletionSpec: t.Contract.Completion.Expanded(t.ID), Attempts: attempts, Triage: t.Triage, TS: s.now()}
	payload, err := json.Marshal(p)
	if err != nil {
		return err
	}
	last := ""
	if n := len(attempts); n > 0 {
		last = " (" + StageText(attempts[n-1].Stage, attempts[n-1].Failure) + ")"
	}
	title := contract.Truncate(fmt.Sprintf("Task %d blocked after %d attempts%s", t.ID, len(attempts), last), 300)
	if n := len(attempts); n > 0 && attempts[n-1].Stage == StageImpossible {
		title = impossibleTitle(t.ID, attempts[n-1].Failure)
	}
	item := &InboxItem{Kind: InboxBlocked, TaskID: t.ID, GoalID: t.GoalID, Payload: payload, CreatedAt: s.now(), Title: title}
	if err := tx.CreateInboxItem(ctx, item); err != nil {
		return err
	}
	e, err := s.composer.TaskBlocked(t, p)
	if err != nil {
		return err
	}
	if err := tx.AppendLedgerEntry(ctx, e); err != nil {
		return err
	}
	return s.emit(ctx, tx, "inbox.created", runner, &t.ID, t.GoalID, map[string]any{"inbox_id": item.ID, "kind": item.Kind})
}

// assigneeName is the name of t's assignee, "" when it has none.
func assigneeName(ctx context.Context, tx Tx, t *Task) (string, error) {
	if t.AssigneeID == nil {
		return "", nil
	}
	a, err := tx.GetAgent(ctx, *t.AssigneeID)
	if err != nil {
		return "", err
	}
	return a.Name, nil
}
