package mcp_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/handlers/mcp"
	"github.com/countersign/countersign/models"
)

// TestRejectGoal: a lead sends a goal waiting for verification back to active through
// reject_goal, with a reason the goal's history keeps and a fix task created in the
// goal; verified tasks stay verified. Every refusal (not a lead, another agent's name,
// an empty reason, no fix task, a bad fix task, a goal not in pending_verify) names
// the rule or the argument and changes nothing, even when it is found after the goal
// was already updated inside the transaction.
func TestRejectGoal(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.threeAgents()
		goal := e.ok("c", "create_goal", map[string]any{"title": "Login and dashboard"}).id()
		var ids []int64
		for _, title := range []string{"Login form", "Dashboard"} {
			id := e.createTask("c", title, "a", goal)
			e.fullCycle(id)
			ids = append(ids, id)
		}
		if s := e.goalStatus(goal).sub("goal").str("state"); s != "pending_verify" {
			t.Fatalf("goal before rejection: %s", s)
		}

		reason := "Dashboard CSS overrides the login form: the submit button is hidden"
		fix := map[string]any{"title": "Fix CSS conflicts between login and dashboard",
			"brief": "Scope the dashboard styles so the login submit button shows.", "assign_to": "a", "verify": "tester"}
		args := func(kv ...any) map[string]any {
			m := map[string]any{"agent_name": "c", "goal_id": goal, "reason": reason, "fix_tasks": []any{fix}}
			for i := 0; i < len(kv); i += 2 {
				if kv[i+1] == nil {
					delete(m, kv[i].(string))
				} else {
					m[kv[i].(string)] = kv[i+1]
				}
			}
			return m
		}

		rejectGoalRefusals(t, e, goal, fix, args)
		before, fixID, c := rejectGoalAccepted(t, e, goal, ids, fix, args)
		checkGoalRejectedEvent(t, e, before, goal, fixID, c, reason)
		// Only a goal waiting for verification is rejected.
		e.refused("c", "reject_goal", args(), "cannot reject a goal that is active", "current state: active", "allowed now: nothing")
		e.refused("c", "verify_goal", map[string]any{"goal_id": goal, "notes": "too early"}, "current state: active")

		// The fix goes through the full cycle; the goal waits for the lead again.
		e.fullCycle(fixID)
		if s := e.goalStatus(goal).sub("goal").str("state"); s != "pending_verify" {
			t.Fatalf("goal after the fix: %s", s)
		}
		e.ok("c", "verify_goal", map[string]any{"goal_id": goal, "notes": "Login and dashboard work together"})
		e.refused("c", "reject_goal", args(), "current state: verified")
	})
}

// rejectGoalRefusals checks every refusal of reject_goal, each leaving the goal, its
// tasks and the events as they were.
func rejectGoalRefusals(t *testing.T, e *env, goal int64, fix map[string]any, args func(kv ...any) map[string]any) {
	t.Helper()
	// Refusals, each leaving the events as they were (refused checks that).
	e.refused("b", "reject_goal", args("agent_name", "b"), "refused by rule lead_only")
	e.refused("a", "reject_goal", args("agent_name", nil), "refused by rule lead_only")
	e.refused("b", "reject_goal", args(), mcp.RuleAgentIsTokenOwner)
	e.refused("c", "reject_goal", args("reason", ""), "invalid arguments", "reason: must not be empty")
	e.refused("c", "reject_goal", args("reason", "   "), "reason: must not be empty")
	e.refused("c", "reject_goal", args("reason", nil), "reason")
	e.refused("c", "reject_goal", args("fix_tasks", []any{}), "invalid arguments", "fix_tasks: at least one fix task is required")
	e.refused("c", "reject_goal", args("fix_tasks", nil), "fix_tasks")
	e.refused("c", "reject_goal", args("reason", " ", "fix_tasks", []any{}), "reason: must not be empty", "fix_tasks: at least one")
	e.refused("c", "reject_goal", args("fix_tasks", []any{fix, map[string]any{"title": " "}}), "fix_tasks[1].title: is required")
	e.refused("c", "reject_goal", args("fix_tasks", []any{map[string]any{"title": "x", "owner": "a"}}), "owner")
	// Found inside the transaction, after the goal and the first fix task were written.
	e.refused("c", "reject_goal", args("fix_tasks", []any{fix, map[string]any{"title": "Second fix", "assign_to": "zed"}}),
		`fix_tasks[].assignee: no agent named "zed"`)
	e.refused("c", "reject_goal", args("fix_tasks", []any{fix, map[string]any{"title": "Second fix", "depends_on": []any{99999}}}),
		"fix_tasks[].depends_on")
	e.refused("c", "reject_goal", args("goal_id", 99999), "not found")
	open := e.ok("c", "create_goal", map[string]any{"title": "Nothing yet"}).id()
	e.refused("c", "reject_goal", args("goal_id", open), "cannot reject a goal that is open", "current state: open")

	st := e.goalStatus(goal)
	if st.sub("goal").str("state") != "pending_verify" || st.num("total") != 2 || st.sub("counts").num("verified") != 2 {
		t.Fatalf("a refused rejection changed the goal: %v", st)
	}
	if n := len(e.tasksOf(goal)); n != 2 {
		t.Fatalf("a refused rejection left %d tasks in the goal", n)
	}
}

// rejectGoalAccepted has the lead reject the goal and checks the fix task it gets; it
// returns the last event id before, the fix task and the lead.
func rejectGoalAccepted(t *testing.T, e *env, goal int64, ids []int64, fix map[string]any, args func(kv ...any) map[string]any) (before, fixID int64, c *models.Agent) {
	t.Helper()
	// The lead rejects: the goal is active, the fix task is in it, verified tasks stay.
	ctx := context.Background()
	before = e.lastEventID()
	out := e.ok("c", "reject_goal", args())
	for name, got := range map[string]obj{"reject_goal": out, "goal_status": e.goalStatus(goal)} {
		counts := got.sub("counts")
		if got.sub("goal").id() != goal || got.sub("goal").str("state") != "active" || got.num("total") != 3 ||
			counts.num("verified") != 2 || counts.num("assigned") != 1 {
			t.Fatalf("%s after the rejection: %v", name, got)
		}
	}
	for _, l := range out.list("tasks") {
		if l.str("title") == fix["title"] {
			if l.str("state") != "assigned" || l.str("assignee") != "a" || l.str("role") != "developer" {
				t.Fatalf("fix task line %v", l)
			}
			fixID = l.id()
		}
	}
	if fixID == 0 || slices.Contains(ids, fixID) {
		t.Fatalf("no fix task in %v", out.list("tasks"))
	}
	c, err := e.svc.Store().GetAgentByName(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	ft, err := e.svc.Store().GetTask(ctx, fixID)
	if err != nil {
		t.Fatal(err)
	}
	if ft.GoalID == nil || *ft.GoalID != goal || ft.Brief != fix["brief"] || ft.Verify != "tester" || ft.CreatorID != c.ID {
		t.Fatalf("fix task %+v", ft)
	}
	return before, fixID, c
}

// checkGoalRejectedEvent checks that the history keeps the reason, who gave it and the
// fix task.
func checkGoalRejectedEvent(t *testing.T, e *env, before, goal, fixID int64, c *models.Agent, reason string) {
	t.Helper()
	ctx := context.Background()
	// The history keeps the reason, who gave it and the fix task.
	evs, err := e.db.ListEvents(ctx, before, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var rejected []models.Event
	for _, ev := range evs {
		if ev.Type == "goal.rejected" {
			rejected = append(rejected, ev)
		}
	}
	if len(rejected) != 1 {
		t.Fatalf("goal.rejected events %+v", evs)
	}
	ev := rejected[0]
	var data struct {
		From, To, Reason string
		FixTasks         []int64 `json:"fix_tasks"`
	}
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		t.Fatal(err)
	}
	if ev.GoalID == nil || *ev.GoalID != goal || ev.ActorID == nil || *ev.ActorID != c.ID ||
		data.Reason != reason || data.From != "pending_verify" || data.To != "active" || !slices.Equal(data.FixTasks, []int64{fixID}) {
		t.Fatalf("goal.rejected %+v data %s", ev, ev.Data)
	}
}

// tasksOf returns the tasks of a goal, read from the store.
func (e *env) tasksOf(goal int64) []models.Task {
	e.t.Helper()
	ts, err := e.svc.Store().ListTasks(context.Background(), models.TaskFilter{GoalID: goal, Limit: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	return ts
}

// lastEventID returns the id of the newest event (0 when there is none).
func (e *env) lastEventID() int64 {
	e.t.Helper()
	var last int64
	for _, ev := range handlertest.Events(e.t, e.db) {
		last = max(last, ev.ID)
	}
	return last
}
