package mcp_test

import (
	"context"
	"testing"

	"github.com/countersign/countersign/models"
)

// TestMinionPilotMCP is the design's minion task verification through MCP: the lead
// spawns a minion task for builder A's task (spawned_by) and gives it to minion M; A,
// the pilot, submits it for review; C approves; A's verify_task and reject_verification
// are refused naming pilot_not_verifier; B verifies.
func TestMinionPilotMCP(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.threeAgents()
		e.agent("m", "developer")
		own := e.createTask("c", "Create login form component", "a", 0)
		e.start(own)

		minion := e.ok("c", "create_task", map[string]any{"title": "Generate test data", "assign_to": "m", "spawned_by": own})
		if minion.num("spawned_by") != int(own) {
			t.Fatalf("created minion task: %v", minion)
		}
		id := minion.id()
		e.state(id, "in_progress", e.ok("m", "update_task", map[string]any{"task_id": id, "status": "in_progress"}))
		e.refused("b", "submit_for_review", map[string]any{"task_id": id, "summary": "not mine"}, "builder_only")
		e.state(id, "review", e.ok("a", "submit_for_review", map[string]any{"agent_name": "a", "task_id": id, "summary": "Minion generated test data"}))
		e.state(id, "completed", e.ok("c", "approve_task", map[string]any{"task_id": id}))
		e.refused("a", "verify_task", map[string]any{"agent_name": "a", "task_id": id, "notes": "my minion did well"}, models.RulePilotNotVerifier)
		e.refused("a", "reject_verification", map[string]any{"task_id": id, "reason": "redo it"}, models.RulePilotNotVerifier)
		v := e.ok("b", "verify_task", map[string]any{"agent_name": "b", "task_id": id, "notes": "Test data is valid"})
		e.state(id, "verified", v)
		if v.str("verifier") != "b" {
			t.Fatalf("verified minion task %v", v)
		}
		e.refused("c", "create_task", map[string]any{"title": "orphan", "spawned_by": 99999}, "spawned_by", "no such task")
	})
}

// TestHatConflictMCP: builder A's attempts ran out and the lead gave the task to M;
// M builds it and C approves it. A is no longer its builder, so separation of duties
// would let A verify it, but A wore the builder hat on it, and the verifier wears the
// tester hat: verify_task is refused naming hat_conflict. B verifies.
func TestHatConflictMCP(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.threeAgents()
		e.agent("m", "developer")
		id := e.createTask("c", "Login form", "a", 0)
		e.start(id)
		ctx := context.Background()
		runner, err := e.svc.Agents.RunnerAgent(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lead, err := e.db.GetAgentByName(ctx, "c")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Tasks.TaskAction(ctx, runner, id, models.ActBlock, models.ActionInput{}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Tasks.TaskAction(ctx, lead, id, models.ActReassign, models.ActionInput{Agent: "m", Reason: "fresh eyes"}); err != nil {
			t.Fatal(err)
		}
		e.state(id, "in_progress", e.ok("m", "update_task", map[string]any{"task_id": id, "status": "in_progress"}))
		e.state(id, "review", e.ok("m", "submit_for_review", map[string]any{"task_id": id, "summary": "done"}))
		e.state(id, "completed", e.ok("c", "approve_task", map[string]any{"task_id": id}))
		e.refused("a", "verify_task", map[string]any{"agent_name": "a", "task_id": id, "notes": "it works"}, models.RuleHatConflict, `"tester"`, `"builder"`)
		e.state(id, "verified", e.ok("b", "verify_task", map[string]any{"agent_name": "b", "task_id": id, "notes": "checked"}))
	})
}
