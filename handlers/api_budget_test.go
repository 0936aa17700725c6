package handlers_test

import (
	"testing"

	"github.com/countersign/countersign/models"
)

// TestBudgetAPI: a lead sets a goal's budget at creation and later, a lead or exec a
// task's; the task and goal carry their spend; a developer is refused (403) and a
// budget of nothing or below zero is a field error (422); neither changes anything.
func TestBudgetAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("dev", models.KindHuman, "developer")
		e.agent("lead", models.KindHuman, "lead")
		e.agent("exec", models.KindHuman, "exec")
		g := e.must(201, "lead", "POST", "/goals", map[string]any{"title": "Capped", "budget": map[string]any{"max_cost_usd": 3}}).num("id")
		id := itoa(e.must(201, "lead", "POST", "/tasks", map[string]any{"title": "t", "goal_id": g}).num("id"))
		if r := e.must(200, "exec", "POST", "/tasks/"+id+"/budget", map[string]any{"max_cost_usd": 1.5}); r.Body["contract"].(map[string]any)["budget"].(map[string]any)["max_cost_usd"] != 1.5 {
			t.Fatalf("the task's budget: %v", r.Body["contract"])
		}
		if r := e.must(200, "lead", "GET", "/tasks/"+id, nil); r.Body["spend"].(map[string]any)["cost_usd"] != 0.0 {
			t.Fatalf("the task's spend: %v", r.Body["spend"])
		}
		goal := e.must(200, "lead", "GET", "/goals/"+itoa(g), nil)
		if goal.Body["goal"].(map[string]any)["budget"].(map[string]any)["max_cost_usd"] != 3.0 || goal.Body["spend"] == nil {
			t.Fatalf("the goal: %v", goal.Body)
		}
		if r := e.must(403, "dev", "POST", "/tasks/"+id+"/budget", map[string]any{"max_cost_usd": 100}); r.errCode() != models.EFORBIDDEN {
			t.Fatalf("a developer's budget: %v", r.Body)
		}
		e.must(422, "lead", "POST", "/tasks/"+id+"/budget", map[string]any{})
		e.must(422, "lead", "POST", "/goals/"+itoa(g)+"/budget", map[string]any{"max_cost_usd": -1})
		e.must(403, "exec", "POST", "/goals/"+itoa(g)+"/budget", map[string]any{"max_cost_usd": 5})
		if r := e.must(200, "lead", "GET", "/tasks/"+id, nil); r.Body["task"].(map[string]any)["contract"].(map[string]any)["budget"].(map[string]any)["max_cost_usd"] != 1.5 {
			t.Fatal("a refused budget changed the task")
		}
		e.must(200, "lead", "POST", "/goals/"+itoa(g)+"/budget", map[string]any{})
		if r := e.must(200, "lead", "GET", "/goals/"+itoa(g), nil); r.Body["goal"].(map[string]any)["budget"] != nil {
			t.Fatal("an empty budget did not remove the goal's cap")
		}
	})
}
