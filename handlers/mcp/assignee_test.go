package mcp_test

import "testing"

// TestAssigneeAlias: create_task and reject_goal's fix tasks take the assignee as
// assignee, the JSON API's name, and as assign_to, its documented alias; naming two
// different agents with the two is refused, naming the alias, and a refusal about
// the agent names the field assignee.
func TestAssigneeAlias(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.threeAgents()
		byName := e.ok("c", "create_task", map[string]any{"title": "Named assignee", "assignee": "a"})
		byAlias := e.ok("c", "create_task", map[string]any{"title": "Aliased assignee", "assign_to": "a"})
		both := e.ok("c", "create_task", map[string]any{"title": "Both, the same", "assignee": "a", "assign_to": "A"})
		for _, v := range []obj{byName, byAlias, both} {
			if v.str("assignee") != "a" || v.str("state") != "assigned" {
				t.Errorf("%s: assignee %q, state %q", v.str("title"), v.str("assignee"), v.str("state"))
			}
		}
		e.refused("c", "create_task", map[string]any{"title": "Two agents", "assignee": "a", "assign_to": "b"},
			"assign_to: is an alias of assignee and names another agent")
		e.refused("c", "create_task", map[string]any{"title": "Nobody", "assignee": "zed"}, `assignee: no agent named "zed"`)

		goal := e.ok("c", "create_goal", map[string]any{"title": "Aliases"}).id()
		id := e.createTask("c", "Only task", "a", goal)
		e.fullCycle(id)
		st := e.ok("c", "reject_goal", map[string]any{"goal_id": goal, "reason": "the integration test failed",
			"fix_tasks": []any{map[string]any{"title": "Fix it", "assignee": "a"}}})
		var fixed bool
		for _, tk := range st.list("tasks") {
			fixed = fixed || (tk.str("title") == "Fix it" && tk.str("assignee") == "a")
		}
		if !fixed {
			t.Errorf("the fix task is not assigned to a: %v", st)
		}
	})
}
