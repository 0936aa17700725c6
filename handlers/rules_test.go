package handlers_test

import (
	"testing"

	"github.com/countersign/countersign/models"
)

// TestSeparationOfDuties checks every rule where the state changes: each refusal is
// 403 naming the rule and leaves the task as it was.
func TestSeparationOfDuties(t *testing.T) {
	type step struct {
		as, action string
		body       map[string]any
		status     int
		rule       string
	}
	cases := []struct {
		name   string
		agents [][]string // name, kind, roles...
		task   map[string]any
		steps  []step
	}{
		{
			name:   "verifier is not the builder",
			agents: [][]string{{"lena", "human", "lead"}, {"bob", "human", "developer", "tester"}, {"rita", "human", "reviewer"}},
			steps: []step{
				{"bob", "start", nil, 200, ""}, {"bob", "submit", nil, 200, ""}, {"rita", "approve", nil, 200, ""},
				{"bob", "verify", map[string]any{"notes": "mine is fine"}, 403, "verifier_not_builder"},
				{"bob", "reject-verification", map[string]any{"reason": "x"}, 403, "verifier_not_builder"},
			},
		},
		{
			name:   "verifier is not the approver",
			agents: [][]string{{"lena", "human", "lead"}, {"bob", "human", "developer"}, {"rita", "human", "reviewer", "tester"}},
			steps: []step{
				{"bob", "start", nil, 200, ""}, {"bob", "submit", nil, 200, ""}, {"rita", "approve", nil, 200, ""},
				{"rita", "verify", map[string]any{"notes": "approved it, verify it"}, 403, "verifier_not_approver"},
				{"lena", "verify", map[string]any{"notes": "checked"}, 200, ""},
			},
		},
		{
			name:   "builder is not the approver when the team allows",
			agents: [][]string{{"lena", "human", "lead"}, {"bob", "human", "developer"}, {"vic", "human", "tester"}},
			steps: []step{
				{"bob", "start", nil, 200, ""}, {"bob", "submit", nil, 200, ""},
				{"bob", "approve", nil, 403, "approver_not_builder"},
				{"bob", "reject", map[string]any{"reason": "x"}, 403, "approver_not_builder"},
				{"lena", "approve", nil, 200, ""},
			},
		},
		{
			name:   "solo team relaxes to builder is not verifier",
			agents: [][]string{{"lena", "human", "lead"}, {"bob", "human", "developer"}},
			steps: []step{
				{"bob", "start", nil, 200, ""}, {"bob", "submit", nil, 200, ""},
				{"lena", "approve", nil, 200, ""},
				{"bob", "verify", map[string]any{"notes": "x"}, 403, "verifier_not_builder"},
				{"lena", "verify", map[string]any{"notes": "lead verifies in a solo team"}, 200, ""},
			},
		},
		{
			name:   "role policy",
			agents: [][]string{{"lena", "human", "lead"}, {"bob", "human", "developer"}, {"rita", "human", "reviewer"}, {"vic", "human", "tester"}},
			task:   map[string]any{"approve": "reviewer", "verify": "tester"},
			steps: []step{
				{"bob", "start", nil, 200, ""}, {"bob", "submit", nil, 200, ""},
				{"vic", "approve", nil, 403, "role_required"},
				{"rita", "approve", nil, 200, ""},
				{"lena", "verify", map[string]any{"notes": "x"}, 403, "role_required"},
				{"vic", "verify", map[string]any{"notes": "x"}, 200, ""},
			},
		},
		{
			name:   "only the assignee starts and only the builder submits",
			agents: [][]string{{"lena", "human", "lead"}, {"bob", "human", "developer"}, {"rita", "human", "reviewer"}},
			steps: []step{
				{"rita", "start", nil, 403, "assignee_only"},
				{"bob", "start", nil, 200, ""},
				{"rita", "submit", nil, 403, "builder_only"},
			},
		},
		{
			name:   "lead-only reopen, exec-only accept, lead or exec assign",
			agents: [][]string{{"lena", "human", "lead"}, {"bob", "human", "developer"}, {"rita", "human", "reviewer"}, {"vic", "human", "tester"}},
			steps: []step{
				{"rita", "assign", map[string]any{"agent": "rita"}, 403, "lead_or_exec"},
				{"bob", "start", nil, 200, ""}, {"bob", "submit", nil, 200, ""}, {"rita", "approve", nil, 200, ""},
				{"vic", "verify", map[string]any{"notes": "ok"}, 200, ""},
				{"vic", "reopen", map[string]any{"reason": "x"}, 403, "lead_only"},
				{"lena", "reopen", map[string]any{"reason": ""}, 422, ""},
			},
		},
		{
			name:   "a worker's review belongs to the runner",
			agents: [][]string{{"lena", "human", "lead"}, {"w1", "worker", "developer"}, {"rita", "human", "reviewer"}},
			task:   map[string]any{"assignee": "w1", "approve": "runner", "verify": "runner"},
			steps: []step{
				{"w1", "start", nil, 200, ""}, {"w1", "submit", nil, 200, ""},
				{"rita", "approve", nil, 403, "runner_policy"},
				{"lena", "approve", nil, 403, "runner_policy"},
			},
		},
		{
			name:   "rejections need a reason",
			agents: [][]string{{"lena", "human", "lead"}, {"bob", "human", "developer"}, {"rita", "human", "reviewer"}, {"vic", "human", "tester"}},
			steps: []step{
				{"bob", "start", nil, 200, ""}, {"bob", "submit", nil, 200, ""},
				{"rita", "reject", map[string]any{"reason": "   "}, 422, ""},
				{"rita", "approve", nil, 200, ""},
				{"vic", "reject-verification", nil, 422, ""},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forEachDialect(t, func(t *testing.T, e *apiEnv) {
				for _, a := range tc.agents {
					e.agent(a[0], models.AgentKind(a[1]), a[2:]...)
				}
				body := map[string]any{"title": "T", "role": "developer", "assignee": "bob", "approve": "any", "verify": "any"}
				for k, v := range tc.task {
					body[k] = v
				}
				id := itoa(e.must(201, "lena", "POST", "/tasks", body).num("id"))
				for i, s := range tc.steps {
					before := e.taskState(mustAtoi(id))
					r := e.do(s.as, "POST", "/tasks/"+id+"/"+s.action, s.body)
					if r.Status != s.status || (s.rule != "" && r.errRule() != s.rule) {
						t.Fatalf("step %d: %s %s: status %d rule %q, want %d %q: %s", i, s.as, s.action, r.Status, r.errRule(), s.status, s.rule, r.Raw)
					}
					if s.status != 200 && e.taskState(mustAtoi(id)) != before {
						t.Fatalf("step %d: a refused action changed the task", i)
					}
				}
			})
		})
	}
}

// TestGoalVerificationIsLeadOnly: only a lead verifies or rejects a goal, with notes.
func TestGoalVerificationIsLeadOnly(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.team()
		g := e.must(201, "lena", "POST", "/goals", map[string]any{"title": "G"}).num("id")
		id := itoa(e.must(201, "lena", "POST", "/tasks", map[string]any{"title": "T", "goal_id": g, "assignee": "bob", "approve": "any", "verify": "any"}).num("id"))
		e.must(200, "bob", "POST", "/tasks/"+id+"/start", nil)
		e.must(200, "bob", "POST", "/tasks/"+id+"/submit", nil)
		e.must(200, "rita", "POST", "/tasks/"+id+"/approve", nil)
		e.must(200, "vic", "POST", "/tasks/"+id+"/verify", map[string]any{"notes": "ok"})
		for _, who := range []string{"eve", "bob", "vic"} {
			if r := e.do(who, "POST", "/goals/"+itoa(g)+"/verify", map[string]any{"notes": "looks good"}); r.Status != 403 || r.errRule() != "lead_only" {
				t.Fatalf("%s verifying the goal: %d %s", who, r.Status, r.Raw)
			}
			if r := e.do(who, "POST", "/goals/"+itoa(g)+"/reject", map[string]any{"reason": "no", "fix_tasks": []any{map[string]any{"title": "f"}}}); r.Status != 403 {
				t.Fatalf("%s rejecting the goal: %d", who, r.Status)
			}
		}
		r := e.must(422, "lena", "POST", "/goals/"+itoa(g)+"/verify", map[string]any{"notes": ""})
		if r.fields()["notes"] == nil {
			t.Fatalf("no field message for notes: %s", r.Raw)
		}
		e.must(200, "lena", "POST", "/goals/"+itoa(g)+"/verify", map[string]any{"notes": "integration tested end to end"})
		if s := e.goalState(g); s != "verified" {
			t.Fatalf("goal %s", s)
		}
	})
}

func mustAtoi(s string) int64 {
	var n int64
	for _, c := range s {
		n = n*10 + int64(c-'0')
	}
	return n
}
