package handlers_test

import (
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
)

// The workflows of goal-verification-system.md, end to end through the API.

func (e *apiEnv) threeAgents() {
	e.agent("a", models.KindHuman, "developer")
	e.agent("b", models.KindHuman, "tester")
	e.agent("c", models.KindHuman, "lead")
}

// buildAndApprove takes a fresh task from assigned to completed: A builds, C approves.
func (e *apiEnv) buildAndApprove(id string) {
	e.t.Helper()
	if e.taskState(mustAtoi(id)) == "assigned" {
		e.must(200, "a", "POST", "/tasks/"+id+"/start", nil)
	}
	e.must(200, "a", "POST", "/tasks/"+id+"/submit", map[string]any{"summary": "Built form with validation", "files_changed": "login.js, login.css"})
	e.must(200, "c", "POST", "/tasks/"+id+"/approve", nil)
}

func TestFlowThreeAgents(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.threeAgents()
		g := e.must(201, "c", "POST", "/goals", map[string]any{"title": "Build login page"}).num("id")
		id := itoa(e.must(201, "c", "POST", "/tasks", map[string]any{"title": "Create login form component", "assignee": "a", "approve": "any", "verify": "any"}).num("id"))
		e.must(200, "c", "POST", "/tasks/"+id+"/link", map[string]any{"goal_id": g})
		e.buildAndApprove(id)
		e.must(200, "b", "POST", "/tasks/"+id+"/verify", map[string]any{"notes": "Form renders correctly, validation works"})
		if s := e.goalState(g); s != "pending_verify" {
			t.Fatalf("goal %s", s)
		}
		r := e.must(200, "c", "GET", "/goals/"+itoa(g), nil)
		counts := r.Body["counts"].(map[string]any)
		if counts["verified"].(float64) != 1 || counts["pending"].(float64) != 0 {
			t.Fatalf("counts %v", counts)
		}
		e.must(200, "c", "POST", "/goals/"+itoa(g)+"/verify", map[string]any{"notes": "Login flow works end-to-end"})
		if s := e.goalState(g); s != "verified" {
			t.Fatalf("goal %s", s)
		}
		// The verified task and the verified goal each left one ledger entry.
		entries, err := e.db.ListLedger(context.Background(), models.LedgerFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 2 || entries[0].Type != models.LedgerTaskComplete || entries[1].Type != models.LedgerGoalVerified {
			t.Fatalf("ledger entries %+v", entries)
		}
	})
}

func TestFlowRejection(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.threeAgents()
		id := itoa(e.must(201, "c", "POST", "/tasks", map[string]any{"title": "Login form", "assignee": "a", "approve": "any", "verify": "any"}).num("id"))
		e.buildAndApprove(id)
		reason := "Form doesn't validate email format - accepts 'abc' as valid email"
		r := e.must(200, "b", "POST", "/tasks/"+id+"/reject-verification", map[string]any{"reason": reason})
		if r.str("state") != "in_progress" || r.str("reason") != reason {
			t.Fatalf("after rejection: %s", r.Raw)
		}
		// The builder sees the reason; no ledger entry exists for an unverified task.
		if entries, _ := e.db.ListLedger(context.Background(), models.LedgerFilter{}); len(entries) != 0 {
			t.Fatalf("a rejected task reached the ledger: %+v", entries)
		}
		e.buildAndApprove(id)
		r = e.must(200, "b", "POST", "/tasks/"+id+"/verify", map[string]any{"notes": "Email validation now correct"})
		if r.str("state") != "verified" {
			t.Fatalf("state %s", r.str("state"))
		}
	})
}

func TestFlowTwoRejectionEscalation(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.threeAgents()
		id := itoa(e.must(201, "c", "POST", "/tasks", map[string]any{"title": "Login form", "assignee": "a", "approve": "any", "verify": "any"}).num("id"))
		e.buildAndApprove(id)
		e.must(200, "b", "POST", "/tasks/"+id+"/reject-verification", map[string]any{"reason": "first"})
		if items := e.must(200, "c", "GET", "/inbox", nil).Body["items"].([]any); len(items) != 0 {
			t.Fatalf("escalated after one rejection: %v", items)
		}
		e.buildAndApprove(id)
		e.must(200, "b", "POST", "/tasks/"+id+"/reject-verification", map[string]any{"reason": "second"})
		items := e.must(200, "c", "GET", "/inbox?kind=escalation", nil).Body["items"].([]any)
		if len(items) != 1 {
			t.Fatalf("inbox %v", items)
		}
		title := items[0].(map[string]any)["title"].(string)
		if !strings.Contains(title, "rejected twice") || !strings.Contains(title, "b") {
			t.Fatalf("inbox title %q", title)
		}
		evs := e.must(200, "c", "GET", "/events?after=0&limit=1000", nil).Body["events"].([]any)
		found := false
		for _, ev := range evs {
			if ev.(map[string]any)["type"] == "task.escalated" {
				found = true
			}
		}
		if !found {
			t.Fatal("no task.escalated event")
		}
		// Verified work settles the escalation: the item leaves the open inbox.
		e.buildAndApprove(id)
		e.must(200, "b", "POST", "/tasks/"+id+"/verify", map[string]any{"notes": "third time right"})
		if open := e.must(200, "c", "GET", "/inbox?kind=escalation", nil).Body["items"].([]any); len(open) != 0 {
			t.Fatalf("escalation still open after the task was verified: %v", open)
		}
		task := e.must(200, "c", "GET", "/tasks/"+id, nil).Body
		items, _ = task["inbox"].([]any)
		if len(items) != 1 || items[0].(map[string]any)["resolution"] != "verified by b" {
			t.Fatalf("the task's inbox items = %v, want the escalation resolved \"verified by b\"", task["inbox"])
		}
	})
}

func TestFlowGoalConfirmation(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.threeAgents()
		g := e.must(201, "c", "POST", "/goals", map[string]any{"title": "GOAL-1"}).num("id")
		var ids []string
		for _, title := range []string{"TASK-1", "TASK-2", "TASK-3"} {
			ids = append(ids, itoa(e.must(201, "c", "POST", "/tasks", map[string]any{"title": title, "goal_id": g, "assignee": "a", "approve": "any", "verify": "any"}).num("id")))
		}
		for _, id := range ids {
			e.buildAndApprove(id)
			e.must(200, "b", "POST", "/tasks/"+id+"/verify", map[string]any{"notes": "ok"})
		}
		if s := e.goalState(g); s != "pending_verify" {
			t.Fatalf("goal %s", s)
		}
		r := e.must(200, "c", "POST", "/goals/"+itoa(g)+"/reject", map[string]any{
			"reason":    "Tasks work individually but CSS conflicts between components",
			"fix_tasks": []any{map[string]any{"title": "Fix CSS conflicts between login and dashboard", "assignee": "a", "approve": "any", "verify": "any"}},
		})
		if st := r.Body["goal"].(map[string]any)["state"]; st != "active" {
			t.Fatalf("goal %v", st)
		}
		tasks := r.Body["tasks"].([]any)
		if len(tasks) != 4 {
			t.Fatalf("%d tasks", len(tasks))
		}
		var fix string
		for _, tk := range tasks {
			m := tk.(map[string]any)
			if m["title"] == "Fix CSS conflicts between login and dashboard" {
				fix = itoa(int64(m["id"].(float64)))
			} else if m["state"] != "verified" {
				t.Fatalf("previously verified task is %v", m["state"])
			}
		}
		e.buildAndApprove(fix)
		e.must(200, "b", "POST", "/tasks/"+fix+"/verify", map[string]any{"notes": "no more conflicts"})
		if s := e.goalState(g); s != "pending_verify" {
			t.Fatalf("goal %s", s)
		}
		e.must(200, "c", "POST", "/goals/"+itoa(g)+"/verify", map[string]any{"notes": "re-tested the integration"})
	})
}

func TestFlowRegressionAfterConfirmation(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.threeAgents()
		g := e.must(201, "c", "POST", "/goals", map[string]any{"title": "G"}).num("id")
		id := itoa(e.must(201, "c", "POST", "/tasks", map[string]any{"title": "T", "goal_id": g, "assignee": "a", "approve": "any", "verify": "any"}).num("id"))
		e.buildAndApprove(id)
		e.must(200, "b", "POST", "/tasks/"+id+"/verify", map[string]any{"notes": "ok"})
		e.must(200, "c", "POST", "/goals/"+itoa(g)+"/verify", map[string]any{"notes": "integration ok"})
		e.must(403, "b", "POST", "/tasks/"+id+"/reopen", map[string]any{"reason": "broke"})
		r := e.must(200, "c", "POST", "/tasks/"+id+"/reopen", map[string]any{"reason": "login broke after the router change"})
		if r.str("state") != "in_progress" || r.num("assignee_id") != e.agents["a"].ID {
			t.Fatalf("reopened task: %s", r.Raw)
		}
		if r.Body["verifier_id"] != nil || r.Body["verified_at"] != nil || r.Body["approver_id"] != nil {
			t.Fatalf("old verification not invalidated: %s", r.Raw)
		}
		if s := e.goalState(g); s != "active" {
			t.Fatalf("goal %s after a reopen, want active", s)
		}
		// Full cycle again.
		e.buildAndApprove(id)
		e.must(200, "b", "POST", "/tasks/"+id+"/verify", map[string]any{"notes": "fixed"})
		if s := e.goalState(g); s != "pending_verify" {
			t.Fatalf("goal %s", s)
		}
	})
}
