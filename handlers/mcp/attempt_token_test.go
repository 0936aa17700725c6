package mcp_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// TestAttemptTokenTools: through MCP an attempt token creates tasks but does not submit its
// own task; every other tool, and any other task, is refused naming
// attempt_token_scope.
func TestAttemptTokenTools(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.agent("c", "lead")
		ctx := context.Background()
		bot := handlertest.CreateAgent(t, e.svc, "bot", models.KindWorker, "", "developer", models.RoleLead)
		runner, err := e.svc.Agents.RunnerAgent(ctx)
		if err != nil {
			t.Fatal(err)
		}
		start := func(title string) int64 {
			tk, err := e.svc.Tasks.CreateTask(ctx, models.System, models.TaskSpec{Title: title, Assignee: "bot",
				Contract: contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone}, Verification: contract.Verification{Type: contract.VerifySkip}}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.Tasks.TaskAction(ctx, runner, tk.ID, models.ActStart, models.ActionInput{}); err != nil {
				t.Fatal(err)
			}
			return tk.ID
		}
		own, other := start("own"), start("other")
		secret, _, err := e.svc.Tokens.IssueAttemptToken(ctx, bot.ID, own, 1, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := e.connect(secret, "")
		if err != nil {
			t.Fatal(err)
		}
		e.clients["attempt"] = cs

		e.refused("attempt", "goal_status", map[string]any{"goal_id": 1}, models.RuleAttemptTokenScope)
		e.refused("attempt", "inbox_list", map[string]any{}, models.RuleAttemptTokenScope)
		e.refused("attempt", "create_goal", map[string]any{"title": "mine"}, models.RuleAttemptTokenScope)
		e.refused("attempt", "reopen_task", map[string]any{"task_id": own, "reason": "r"}, models.RuleAttemptTokenScope)
		e.refused("attempt", "submit_for_review", map[string]any{"task_id": other, "summary": "s"}, models.RuleAttemptTokenScope)
		e.refused("attempt", "update_task", map[string]any{"task_id": own, "status": "cancelled"}, models.RuleAttemptTokenScope)

		child := e.ok("attempt", "create_task", map[string]any{"title": "a sub-task"})
		if child["state"] != "pending" {
			t.Fatalf("created %v", child)
		}
		// The runner submits the task its worker runs.
		e.refused("attempt", "submit_for_review", map[string]any{"task_id": own, "summary": "done"}, models.RuleAttemptTokenScope)

		// It asks a person about its own task, once at a time, and about no other.
		e.refused("attempt", "ask_question", map[string]any{"task_id": other, "question": "which?"}, models.RuleAttemptTokenScope)
		e.ok("attempt", "ask_question", map[string]any{"task_id": own, "question": "Which endpoint?"})
		e.refused("attempt", "ask_question", map[string]any{"task_id": own, "question": "And another?"}, "conflict")
		tk, err := e.svc.Store().GetTask(ctx, own)
		if err != nil || tk.OpenQuestion() == nil || tk.OpenQuestion().Text != "Which endpoint?" || tk.OpenQuestion().Attempt != 1 {
			t.Fatalf("the recorded question: %+v %v", tk, err)
		}
		// Answering is a person's, and only once the runner parked the task.
		e.refused("attempt", "answer_question", map[string]any{"task_id": own, "answer": "v2"}, models.RuleAttemptTokenScope)
		e.refused("c", "answer_question", map[string]any{"task_id": own, "answer": "v2"}, "in_progress")
	})
}
