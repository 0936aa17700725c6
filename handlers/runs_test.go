package handlers_test

import (
	"strings"
	"testing"
)

// TestWorkflowRunReleasesStepsInOrder: a run creates one task per step; step 2 cannot
// start before step 1 is verified, and its release is announced by an event.
func TestWorkflowRunReleasesStepsInOrder(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.team()
		e.must(403, "bob", "POST", "/templates", "name: two-steps\nsteps:\n  - role: developer\n    brief: b\n")
		tpl := "name: two-steps\nsteps:\n" +
			"  - {name: 'Build {{feature}}', role: developer, brief: 'build {{feature}}', approve: any, verify: any, verification: {type: skip}}\n" +
			"  - {name: 'Document {{feature}}', role: developer, brief: 'document it', approve: any, verify: any, verification: {type: advisory}}\n"
		r := e.raw("lena", "POST", "/templates", "application/yaml", tpl)
		if r.Status != 201 || r.num("version") != 1 {
			t.Fatalf("template: %d %s", r.Status, r.Raw)
		}
		g := e.must(201, "lena", "POST", "/goals", map[string]any{"title": "Dark mode"}).num("id")
		e.must(422, "lena", "POST", "/goals/"+itoa(g)+"/runs", map[string]any{"template": "nope"})
		e.must(403, "bob", "POST", "/goals/"+itoa(g)+"/runs", map[string]any{"template": "two-steps"})
		run := e.must(201, "lena", "POST", "/goals/"+itoa(g)+"/runs", map[string]any{"template": "two-steps", "params": map[string]string{"feature": "dark mode"}})
		tasks := run.Body["tasks"].([]any)
		if len(tasks) != 2 {
			t.Fatalf("%d tasks", len(tasks))
		}
		first, second := tasks[0].(map[string]any), tasks[1].(map[string]any)
		if first["title"] != "Build dark mode" || first["brief"] != "build dark mode" || second["step_num"].(float64) != 2 {
			t.Fatalf("params not applied or steps out of order: %v / %v", first, second)
		}
		contract := first["contract"].(map[string]any)["verification"].(map[string]any)
		if contract["type"] != "skip" || contract["generated_from"] != "template" {
			t.Fatalf("step contract %v", contract)
		}
		id1, id2 := itoa(int64(first["id"].(float64))), itoa(int64(second["id"].(float64)))
		e.must(200, "lena", "POST", "/tasks/"+id1+"/assign", map[string]any{"agent": "bob"})
		e.must(200, "lena", "POST", "/tasks/"+id2+"/assign", map[string]any{"agent": "bob"})
		r = e.must(409, "bob", "POST", "/tasks/"+id2+"/start", nil)
		if msg := r.errField("message"); !strings.Contains(msg, "waits for task "+id1) {
			t.Fatalf("refusal does not name the dependency: %s", msg)
		}
		e.must(200, "bob", "POST", "/tasks/"+id1+"/start", nil)
		e.must(200, "bob", "POST", "/tasks/"+id1+"/submit", nil)
		e.must(200, "rita", "POST", "/tasks/"+id1+"/approve", nil)
		e.must(200, "vic", "POST", "/tasks/"+id1+"/verify", map[string]any{"notes": "ok"})
		released := false
		for _, ev := range e.must(200, "lena", "GET", "/events?limit=1000", nil).Body["events"].([]any) {
			m := ev.(map[string]any)
			if m["type"] == "task.released" && int64(m["task_id"].(float64)) == mustAtoi(id2) {
				released = true
			}
		}
		if !released {
			t.Fatal("no task.released event for step 2")
		}
		e.must(200, "bob", "POST", "/tasks/"+id2+"/start", nil)
		if s := e.goalState(g); s != "active" {
			t.Fatalf("goal %s", s)
		}
	})
}
