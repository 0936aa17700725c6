package handlers_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// actionCall says who takes an action in the transition table and with what body.
type actionCall struct {
	as   string
	body map[string]any
}

var tableCalls = map[models.Action]actionCall{
	models.ActAssign:             {"lena", map[string]any{"assignee": "bob"}},
	models.ActStart:              {"bob", nil},
	models.ActSubmit:             {"bob", map[string]any{"summary": "done"}},
	models.ActApprove:            {"rita", nil},
	models.ActReject:             {"rita", map[string]any{"reason": "missing tests"}},
	models.ActVerify:             {"vic", map[string]any{"notes": "works"}},
	models.ActRejectVerification: {"vic", map[string]any{"reason": "fails on empty input"}},
	models.ActReopen:             {"lena", map[string]any{"reason": "regressed"}},
	models.ActCancel:             {"lena", nil},
	models.ActRetry:              {"eve", map[string]any{"reason": "use the v2 endpoint"}},
	models.ActReassign:           {"eve", map[string]any{"agent": "bob"}}, // agent: assignee's alias
	models.ActAccept:             {"eve", map[string]any{"reason": "good enough for the demo"}},
	models.ActAnswer:             {"lena", map[string]any{"answer": "use the v2 endpoint"}},
	models.ActAmend:              {"lena", map[string]any{"brief": "Build the form, with validation."}},
}

// team creates five people so that triple separation applies.
func (e *apiEnv) team() {
	e.agent("lena", models.KindHuman, "lead")
	e.agent("eve", models.KindHuman, "exec")
	e.agent("bob", models.KindHuman, "developer")
	e.agent("rita", models.KindHuman, "reviewer")
	e.agent("vic", models.KindHuman, "tester")
}

// taskIn creates a task and puts it straight into state st with plausible parties,
// so that each transition can be tried from each state.
func (e *apiEnv) taskIn(st models.TaskState) int64 {
	e.t.Helper()
	r := e.must(201, "lena", "POST", "/tasks", map[string]any{"title": "Build the form", "role": "developer", "assignee": "bob", "approve": "any", "verify": "any"})
	id := r.num("id")
	ctx := context.Background()
	t, err := e.db.GetTask(ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	bob, rita, vic := e.agents["bob"].ID, e.agents["rita"].ID, e.agents["vic"].ID
	switch st {
	case models.TaskPending:
		t.AssigneeID = nil
	case models.TaskAssigned:
	default:
		t.BuilderID = &bob
	}
	if st == models.TaskCompleted || st == models.TaskVerified {
		t.ApproverID = &rita
	}
	if st == models.TaskVerified {
		t.VerifierID = &vic
	}
	if st == models.TaskWaiting {
		t.Questions = []models.Question{{Text: "Which endpoint?", Attempt: 1, AskedAt: time.Now()}}
	}
	t.State = st
	if err := e.db.UpdateTask(ctx, t); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// claimImpossible gives blocked task id its worker's open impossible claim.
func (e *apiEnv) claimImpossible(id int64) {
	e.t.Helper()
	t, err := e.db.GetTask(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	t.Questions = append(t.Questions, models.Question{Text: "the tests contradict the spec", Attempt: 1, AskedAt: time.Now(), Impossible: true})
	if err := e.db.UpdateTask(context.Background(), t); err != nil {
		e.t.Fatal(err)
	}
}

// TestTaskTransitionTable tries every action from every state through the API: legal
// ones move the task to the table's state, illegal ones are 409 naming the current
// state and the actions allowed from it that the caller may take.
func TestTaskTransitionTable(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.team()
		for _, act := range models.Actions {
			if act == models.ActBlock || act == models.ActAsk {
				continue // the runner's alone; see TestBlockIsNotAnAPIAction
			}
			call := tableCalls[act]
			for _, from := range models.TaskStates {
				legal := slices.Contains(models.TaskTransitions[act].From, from)
				t.Run(string(act)+"/from_"+string(from), func(t *testing.T) {
					e.t = t
					id := e.taskIn(from)
					if act == models.ActAnswer && from == models.TaskBlocked {
						e.claimImpossible(id) // a blocked task takes an answer only on a claim
					}
					before := e.eventCount()
					r := e.do(call.as, "POST", "/tasks/"+itoa(id)+"/"+string(act), call.body)
					if !legal {
						if r.Status != 409 || r.errState() != string(from) {
							t.Fatalf("status %d state %q, want 409 naming %q: %s", r.Status, r.errState(), from, r.Raw)
						}
						// allowed: the legal actions this caller may take (TestConflictListsOnlyCallersActions
						// checks the lists themselves).
						allowed, _ := r.Body["error"].(map[string]any)["allowed"].([]any)
						task, err := e.db.GetTask(context.Background(), id)
						if err != nil {
							t.Fatal(err)
						}
						want, err := e.svc.Tasks.ActionsFor(context.Background(), e.agents[call.as], task, models.AllowedActions(from))
						if err != nil {
							t.Fatal(err)
						}
						if fmt.Sprint(allowed) != fmt.Sprint(want) {
							t.Fatalf("allowed %v, want %v (of the legal %v)", allowed, want, models.AllowedActions(from))
						}
						if got := e.taskState(id); got != string(from) || e.eventCount() != before {
							t.Fatalf("refused action changed the task (%s) or wrote events", got)
						}
						return
					}
					want := string(models.TaskTransitions[act].To)
					if act == models.ActRetry || act == models.ActReassign || act == models.ActAmend {
						want = string(models.TaskAssigned)
					}
					if r.Status != 200 || r.str("state") != want {
						t.Fatalf("status %d state %q, want 200 %q: %s", r.Status, r.str("state"), want, r.Raw)
					}
					if e.eventCount() <= before {
						t.Fatal("a transition wrote no event")
					}
				})
			}
		}
	})
}

// TestBlockIsNotAnAPIAction: only the runner blocks, never a caller of the API.
func TestBlockIsNotAnAPIAction(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.team()
		id := e.taskIn(models.TaskInProgress)
		e.must(404, "lena", "POST", "/tasks/"+itoa(id)+"/block", nil)
		if _, err := e.svc.Tasks.TaskAction(context.Background(), e.agents["lena"], id, models.ActBlock, models.ActionInput{}); models.ErrorCode(err) != models.EFORBIDDEN {
			t.Fatalf("a lead blocking through the service: %v, want forbidden", err)
		}
		// Parking a task on a question is the runner's too: a worker asks through
		// POST /tasks/{id}/questions, never by moving the task.
		e.must(404, "bob", "POST", "/tasks/"+itoa(id)+"/ask", map[string]any{"question": "?"})
		if _, err := e.svc.Tasks.TaskAction(context.Background(), e.agents["bob"], id, models.ActAsk, models.ActionInput{Question: "?"}); models.ErrorCode(err) != models.EFORBIDDEN {
			t.Fatalf("a builder parking its task through the service: %v, want forbidden", err)
		}
	})
}

// TestGoalTransitions covers the goal lifecycle: open → active → pending_verify →
// verified, pending_verify → active on rejection, and the illegal moves.
func TestGoalTransitions(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.team()
		g := e.must(201, "lena", "POST", "/goals", map[string]any{"title": "Login page"}).num("id")
		gid := itoa(g)
		if s := e.goalState(g); s != "open" {
			t.Fatalf("new goal is %s", s)
		}
		// Verifying or rejecting an open goal is a conflict naming the state.
		r := e.must(409, "lena", "POST", "/goals/"+gid+"/verify", map[string]any{"notes": "x"})
		if r.errState() != "open" {
			t.Fatalf("state %q", r.errState())
		}
		e.must(409, "lena", "POST", "/goals/"+gid+"/reject", map[string]any{"reason": "x", "fix_tasks": []any{map[string]any{"title": "fix"}}})

		task := e.must(201, "lena", "POST", "/tasks", map[string]any{"title": "Form", "goal_id": g, "assignee": "bob", "approve": "any", "verify": "any"}).num("id")
		tid := itoa(task)
		if s := e.goalState(g); s != "open" {
			t.Fatalf("goal with an assigned task is %s, want open", s)
		}
		e.must(200, "bob", "POST", "/tasks/"+tid+"/start", nil)
		if s := e.goalState(g); s != "active" {
			t.Fatalf("goal with a task in progress is %s, want active", s)
		}
		e.must(200, "bob", "POST", "/tasks/"+tid+"/submit", map[string]any{"summary": "form"})
		e.must(200, "rita", "POST", "/tasks/"+tid+"/approve", nil)
		e.must(409, "lena", "POST", "/goals/"+gid+"/verify", map[string]any{"notes": "x"})
		e.must(200, "vic", "POST", "/tasks/"+tid+"/verify", map[string]any{"notes": "ok"})
		if s := e.goalState(g); s != "pending_verify" {
			t.Fatalf("goal with every task verified is %s", s)
		}
		e.must(200, "lena", "POST", "/goals/"+gid+"/reject", map[string]any{"reason": "CSS clash", "fix_tasks": []any{map[string]any{"title": "Fix CSS", "assignee": "bob", "approve": "any", "verify": "any"}}})
		if s := e.goalState(g); s != "active" {
			t.Fatalf("rejected goal is %s", s)
		}
		if s := e.taskState(task); s != "verified" {
			t.Fatalf("verified task became %s after the goal was rejected", s)
		}
		e.must(409, "lena", "POST", "/goals/"+gid+"/verify", map[string]any{"notes": "x"})

		// From verified, neither verify nor reject is legal, and no task can join it.
		fix := e.must(200, "lena", "GET", "/goals/"+gid, nil).Body["tasks"].([]any)
		for _, tk := range fix {
			m := tk.(map[string]any)
			if m["state"] == "verified" {
				continue
			}
			id := itoa(int64(m["id"].(float64)))
			e.must(200, "bob", "POST", "/tasks/"+id+"/start", nil)
			e.must(200, "bob", "POST", "/tasks/"+id+"/submit", nil)
			e.must(200, "rita", "POST", "/tasks/"+id+"/approve", nil)
			e.must(200, "vic", "POST", "/tasks/"+id+"/verify", map[string]any{"notes": "ok"})
		}
		e.must(200, "lena", "POST", "/goals/"+gid+"/verify", map[string]any{"notes": "all good"})
		for act, body := range map[string]map[string]any{"verify": {"notes": "x"}, "reject": {"reason": "x", "fix_tasks": []any{map[string]any{"title": "f"}}}} {
			r := e.must(409, "lena", "POST", "/goals/"+gid+"/"+act, body)
			if r.errState() != "verified" {
				t.Fatalf("%s a verified goal: state %q", act, r.errState())
			}
		}
		e.must(409, "lena", "POST", "/tasks", map[string]any{"title": "late", "goal_id": g})
	})
}
