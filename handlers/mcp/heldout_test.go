package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
)

const (
	mcpHeldOutPath   = "calc_heldout_test.go"
	mcpHeldOutMarker = "HELDOUT_SECRET_Add_10_4"
)

func mcpHeldOutContract() map[string]any {
	return map[string]any{
		"completion": map[string]any{"type": "none", "timeout": "20m"},
		"verification": map[string]any{"type": "verifiable",
			"criteria": []any{map[string]any{"activity": "unit-test", "description": "the tests pass"}},
			"held_out": []any{map[string]any{"path": mcpHeldOutPath,
				"content": "package calc\n\nfunc TestBig(t *testing.T) { t.Log(\"" + mcpHeldOutMarker + "\") }\n"}}},
	}
}

// noHeldOut fails unless a tool's answer (text and structured content) names how many
// held-out tests there are and carries neither the test's path nor its content.
func (e *env) noHeldOut(who string, o obj) {
	e.t.Helper()
	raw, _ := json.Marshal(o)
	if strings.Contains(string(raw), mcpHeldOutPath) || strings.Contains(string(raw), mcpHeldOutMarker) {
		e.t.Fatalf("%s reads the held-out test through MCP: %s", who, raw)
	}
	if o.num("held_out_tests") != 1 {
		e.t.Fatalf("%s: held_out_tests %v, want 1: %s", who, o["held_out_tests"], raw)
	}
}

// TestCreateTaskHeldOut: create_task takes a contract; a lead's held-out test is
// stored as given, and no tool answer carries it back (only its count), neither to the
// lead nor to the developer who works the task nor to an attempt token. A developer's
// held-out test is refused naming commands_need_editor and stores nothing; an unknown
// contract field is refused naming it.
func TestCreateTaskHeldOut(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.agent("a", "developer")
		e.agent("c", "lead")
		ctx := context.Background()

		created := e.ok("c", "create_task", map[string]any{"title": "Make Add add", "assign_to": "a", "contract": mcpHeldOutContract()})
		e.noHeldOut("the lead creating it", created)
		stored, err := e.svc.Store().GetTask(ctx, created.id())
		if err != nil {
			t.Fatal(err)
		}
		if h := stored.Contract.Verification.HeldOut; len(h) != 1 || h[0].Path != mcpHeldOutPath || !strings.Contains(h[0].Content, mcpHeldOutMarker) ||
			stored.Contract.Completion.Timeout.Duration != 20*time.Minute {
			t.Fatalf("stored contract %+v", stored.Contract)
		}
		e.noHeldOut("the developer starting it", e.ok("a", "update_task", map[string]any{"task_id": created.id(), "status": "in_progress"}))

		// An attempt token of a worker that holds the lead role.
		bot := handlertest.CreateAgent(t, e.svc, "bot", models.KindWorker, "", "developer", models.RoleLead)
		secret, _, err := e.svc.Tokens.IssueAttemptToken(ctx, bot.ID, created.id(), 1, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := e.connect(secret, "")
		if err != nil {
			t.Fatal(err)
		}
		e.clients["attempt"] = cs
		child := e.ok("attempt", "create_task", map[string]any{"title": "a sub-task"})
		if child.num("held_out_tests") != 0 {
			t.Fatalf("a sub-task inherited held-out tests: %v", child)
		}

		// A developer may not set held-out tests: refused, nothing stored.
		before := taskCount(t, e)
		e.refused("a", "create_task", map[string]any{"title": "Sneak a test in", "contract": mcpHeldOutContract()},
			models.RuleCommandsNeedEditor, "verification.held_out")
		if taskCount(t, e) != before {
			t.Fatal("a refused create_task stored a task")
		}
		e.refused("c", "create_task", map[string]any{"title": "Typo", "contract": map[string]any{"verification": map[string]any{"held_outs": []any{}}}},
			"invalid arguments", "held_outs")
	})
}

func taskCount(t *testing.T, e *env) int {
	t.Helper()
	tasks, err := e.svc.Store().ListTasks(context.Background(), models.TaskFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return len(tasks)
}
