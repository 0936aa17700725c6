package handlers_test

import (
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// parallelTemplate is a template whose steps 2 and 3 form parallel group "build";
// split puts a step of no group between them.
func parallelTemplate(split bool, onExhausted string) map[string]any {
	step := func(name, group string) map[string]any {
		s := map[string]any{"name": name, "role": "developer", "brief": "Do " + name + ".",
			"completion": map[string]any{"type": "none"}, "verification": map[string]any{"type": "skip"}}
		if group != "" {
			s["parallel"] = group
		}
		return s
	}
	steps := []any{step("plan", ""), step("api", "build"), step("ui", "build"), step("ship", "")}
	if split {
		steps = []any{step("plan", ""), step("api", "build"), step("docs", ""), step("ui", "build")}
	}
	if onExhausted != "" {
		steps[1].(map[string]any)["review"] = map[string]any{"role": "reviewer", "on_exhausted": onExhausted}
	}
	return map[string]any{"name": "parallel-flow", "steps": steps}
}

// TestParallelAndReviewRulesAPI: every rule of parallel steps and review rounds
// refuses through the API with its name: a split parallel group
// (parallel_group_consecutive) and an unknown on_exhausted (review_on_exhausted) on a
// template and on a task's contract are 422; starting the step after a parallel group
// before the whole group is verified is 409 (waits_for_steps). A template with a
// consecutive group and proceed_with_warnings is saved, and its run makes the
// group's steps wait for the step before it and the next step for all of them.
func TestParallelAndReviewRulesAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("lena", models.KindHuman, models.RoleLead, models.RoleExec)
		e.agent("dan", models.KindHuman, "developer")
		e.agent("rita", models.KindHuman, "reviewer")

		r := e.do("lena", "POST", "/templates", parallelTemplate(true, ""))
		if r.Status != 422 || r.errRule() != models.RuleParallelConsecutive || r.fields()["steps[3].parallel"] == nil {
			t.Fatalf("split group: %d %s", r.Status, r.Raw)
		}
		r = e.do("lena", "POST", "/templates", parallelTemplate(false, "sometimes"))
		if r.Status != 422 || r.errRule() != contract.RuleReviewOnExhausted || r.fields()["steps[1].review.on_exhausted"] == nil {
			t.Fatalf("bad on_exhausted: %d %s", r.Status, r.Raw)
		}
		r = e.do("lena", "POST", "/tasks", map[string]any{"title": "t", "brief": "b", "role": "developer",
			"contract": map[string]any{"completion": map[string]any{"type": "none"}, "verification": map[string]any{"type": "skip"},
				"review": map[string]any{"role": "reviewer", "on_exhausted": "retry"}}})
		if r.Status != 422 || r.errRule() != contract.RuleReviewOnExhausted || r.fields()["contract.review.on_exhausted"] == nil {
			t.Fatalf("task contract on_exhausted: %d %s", r.Status, r.Raw)
		}

		e.must(201, "lena", "POST", "/templates", parallelTemplate(false, contract.OnExhaustedProceed))
		g := e.must(201, "lena", "POST", "/goals", map[string]any{"title": "G"})
		run := e.must(201, "lena", "POST", "/goals/"+itoa(g.num("id"))+"/runs", map[string]any{"template": "parallel-flow"})
		raw, _ := run.Body["tasks"].([]any)
		var ids []int64
		for _, x := range raw {
			ids = append(ids, int64(x.(map[string]any)["id"].(float64)))
		}
		if len(ids) != 4 {
			t.Fatalf("run tasks %s", run.Raw)
		}
		deps := func(id int64) []any {
			tk := e.must(200, "lena", "GET", "/tasks/"+itoa(id), nil)
			task, _ := tk.Body["task"].(map[string]any)
			d, _ := task["depends_on"].([]any)
			return d
		}
		if d := deps(ids[1]); len(d) != 1 || int64(d[0].(float64)) != ids[0] {
			t.Fatalf("api depends on %v", d)
		}
		if d := deps(ids[3]); len(d) != 2 {
			t.Fatalf("ship depends on %v, want both steps of the group", d)
		}
		// Walk plan and one step of the group to verified by hand; ship still waits.
		walk := func(id int64) {
			e.must(200, "lena", "POST", "/tasks/"+itoa(id)+"/assign", map[string]any{"agent": "dan"})
			e.must(200, "dan", "POST", "/tasks/"+itoa(id)+"/start", nil)
			e.must(200, "dan", "POST", "/tasks/"+itoa(id)+"/submit", map[string]any{"summary": "done"})
			e.must(200, "rita", "POST", "/tasks/"+itoa(id)+"/approve", nil)
			e.must(200, "lena", "POST", "/tasks/"+itoa(id)+"/verify", map[string]any{"notes": "ok"})
		}
		walk(ids[0])
		walk(ids[1])
		e.must(200, "lena", "POST", "/tasks/"+itoa(ids[3])+"/assign", map[string]any{"agent": "dan"})
		r = e.do("dan", "POST", "/tasks/"+itoa(ids[3])+"/start", nil)
		if r.Status != 409 || r.errRule() != models.RuleWaitsForSteps {
			t.Fatalf("start before the group is verified: %d %s", r.Status, r.Raw)
		}
	})
}
