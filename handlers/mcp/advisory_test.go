package mcp_test

import (
	"context"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// TestResolveAdvisory: an ambiguous advisory task waits undelegated; through MCP its
// start is refused (advisory_prompt), a developer cannot answer (lead_or_exec), bad
// criteria are refused with their field and change nothing, shell from an exec is
// refused (commands_need_editor), the exec makes it verifiable and the developer
// starts it; answering again is refused (advisory_prompt); a lead proceeds with
// another, which then starts as advisory.
func TestResolveAdvisory(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.threeAgents()
		e.agent("x", "exec")
		mk := func(title, brief string) int64 {
			return e.ok("c", "create_task", map[string]any{"creator": "c", "title": title, "brief": brief, "assign_to": "a"}).id()
		}
		held := mk("Investigate the checkout timeout", "Look at api/checkout.go and fix what you find.")
		other := mk("Write a plan for the login rework", "Cover sessions and tokens.")
		items := e.ok("c", "inbox_list", map[string]any{"kind": models.InboxAdvisoryPrompt}).list("items")
		if len(items) != 2 {
			t.Fatalf("advisory prompts %v", items)
		}
		e.refused("a", "update_task", map[string]any{"agent_name": "a", "task_id": held, "status": "in_progress"}, models.RuleAdvisoryPrompt)
		e.refused("a", "resolve_advisory", map[string]any{"task_id": held, "action": "proceed"}, "lead_or_exec")
		e.refused("x", "resolve_advisory", map[string]any{"task_id": held, "action": "make_verifiable",
			"criteria": []map[string]any{{"activity": "unit-test", "description": " "}}}, "description")
		e.refused("x", "resolve_advisory", map[string]any{"task_id": held, "action": "make_verifiable",
			"criteria": []map[string]any{{"activity": "unit-test", "description": "tests pass", "command": "go test ./..."}}}, models.RuleCommandsNeedEditor)
		e.ok("x", "resolve_advisory", map[string]any{"task_id": held, "action": "make_verifiable",
			"criteria": []map[string]any{{"activity": "unit-test", "description": "a test shows checkout under 200 ms"}}})
		got, err := e.db.GetTask(context.Background(), held)
		if err != nil || got.Contract.Verification.Type != contract.VerifyVerifiable || got.Contract.Verification.Criteria[0].Description != "a test shows checkout under 200 ms" {
			t.Fatalf("made verifiable: %v %+v", err, got)
		}
		e.start(held)
		e.refused("c", "resolve_advisory", map[string]any{"task_id": held, "action": "proceed"}, models.RuleAdvisoryPrompt)
		e.ok("c", "resolve_advisory", map[string]any{"agent_name": "c", "task_id": other, "action": "proceed", "reason": "a plan is the deliverable"})
		e.start(other)
		if items := e.ok("c", "inbox_list", map[string]any{"kind": models.InboxAdvisoryPrompt}).list("items"); len(items) != 0 {
			t.Fatalf("prompts left %v", items)
		}
	})
}
