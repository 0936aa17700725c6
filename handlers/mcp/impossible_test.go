package mcp_test

import (
	"context"
	"testing"

	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// TestImpossibleClaimOverMCP: a task blocked because its worker said it cannot be done
// as specified is answered with answer_question and amended with amend_task, both
// sending it back to its assignee; amend_task refuses an empty brief.
func TestImpossibleClaimOverMCP(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.agent("c", "lead")
		ctx := context.Background()
		handlertest.CreateAgent(t, e.svc, "bot", models.KindWorker, "", "developer")
		runner, err := e.svc.Agents.RunnerAgent(ctx)
		if err != nil {
			t.Fatal(err)
		}
		claimed := func(title string) int64 {
			tk, err := e.svc.Tasks.CreateTask(ctx, models.System, models.TaskSpec{Title: title, Brief: "Do " + title + ".", Role: "developer", Assignee: "bot",
				Contract: contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone}, Verification: contract.Verification{Type: contract.VerifySkip}}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.Tasks.TaskAction(ctx, runner, tk.ID, models.ActStart, models.ActionInput{}); err != nil {
				t.Fatal(err)
			}
			if err := e.svc.Store().InTx(ctx, func(tx models.Tx) error {
				lt, err := tx.LockTask(ctx, tk.ID)
				if err != nil {
					return err
				}
				return e.svc.Attempts.BlockImpossibleTask(ctx, tx, runner, lt, 1, "the tests contradict the spec", nil)
			}); err != nil {
				t.Fatal(err)
			}
			return tk.ID
		}
		answered, amended := claimed("add"), claimed("sort")
		e.state(answered, "assigned", e.ok("c", "answer_question", map[string]any{"task_id": answered, "answer": "follow the spec"}))
		e.refused("c", "amend_task", map[string]any{"task_id": amended, "brief": " "}, "brief")
		e.state(amended, "assigned", e.ok("c", "amend_task", map[string]any{"task_id": amended, "brief": "Sort descending."}))
		tk, err := e.svc.Store().GetTask(ctx, amended)
		if err != nil || tk.Brief != "Sort descending." {
			t.Fatalf("amended: %+v %v", tk, err)
		}
	})
}
