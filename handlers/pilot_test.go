package handlers_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// TestMinionPilotSeedExample is the goal-verification design's "Minion Task
// Verification" through the API: builder A spawns a minion task for grunt work while
// building his own; the minion does it; A, the pilot, reviews the output and submits it
// for review; the lead approves; A may not verify it (pilot_not_verifier, also for a
// verification rejection); checker B verifies it.
func TestMinionPilotSeedExample(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("c", models.KindHuman, models.RoleLead)    // the lead
		e.agent("a", models.KindHuman, "developer")        // the builder, and the pilot
		e.agent("b", models.KindHuman, "tester")           // the checker
		e.agent("m", models.KindHuman, "developer")        // the minion
		e.agent("r", models.KindHuman, "reviewer", "lead") // someone else, neither builder nor pilot
		g := e.must(201, "c", "POST", "/goals", map[string]any{"title": "Build login page"}).num("id")
		own := e.must(201, "c", "POST", "/tasks", map[string]any{"title": "Create login form component", "goal_id": g, "assignee": "a", "approve": "any", "verify": "any"}).num("id")
		e.must(200, "a", "POST", "/tasks/"+itoa(own)+"/start", nil)

		// 1. Builder A spawns a minion for grunt work.
		r := e.must(201, "a", "POST", "/tasks", map[string]any{"title": "Generate test data", "goal_id": g, "spawned_by": own, "approve": "any", "verify": "any"})
		minion := r.num("id")
		if r.num("spawned_by") != own {
			t.Fatalf("spawned_by %d, want %d: %s", r.num("spawned_by"), own, r.Raw)
		}
		if _, set := r.Body["parent_task_id"]; set {
			t.Fatalf("an explicit spawned_by is no attempt token's child: %s", r.Raw)
		}
		path := "/tasks/" + itoa(minion)
		e.must(200, "c", "POST", path+"/assign", map[string]any{"agent": "m"})
		e.must(200, "m", "POST", path+"/start", nil)
		// The minion completes the sub-task; only its builder or its pilot hands it in.
		e.refused("r", minion, "submit", map[string]any{"summary": "not mine"}, "builder_only")

		// 2. Builder A (the pilot) reviews the minion's output and submits it.
		r = e.must(200, "a", "POST", path+"/submit", map[string]any{"summary": "Minion generated test data"})
		if r.str("state") != "review" || r.str("summary") != "Minion generated test data" {
			t.Fatalf("the pilot's submission: %s", r.Raw)
		}
		e.must(200, "c", "POST", path+"/approve", nil)

		// 3. The pilot who spawned the minion cannot verify its output; checker B does.
		e.refused("a", minion, "verify", map[string]any{"notes": "my minion did well"}, models.RulePilotNotVerifier)
		e.refused("a", minion, "reject-verification", map[string]any{"reason": "redo it"}, models.RulePilotNotVerifier)
		r = e.must(200, "b", "POST", path+"/verify", map[string]any{"notes": "Test data is valid"})
		if r.str("state") != "verified" || r.num("verifier_id") != e.agents["b"].ID {
			t.Fatalf("checker B's verification: %s", r.Raw)
		}
		var pilotHat bool
		for _, ev := range eventsOfTask(t, e, minion) {
			if hat, who, ok := models.EventHat(ev); ok && ev.Type == "task.submitted" && who == e.agents["a"].ID && hat == models.HatPilot {
				pilotHat = true
			}
		}
		if !pilotHat {
			t.Fatal("the pilot's submission did not record the pilot hat")
		}

		// An explicit spawned_by names a task that exists.
		bad := e.must(422, "a", "POST", "/tasks", map[string]any{"title": "orphan", "spawned_by": 99999})
		if bad.fields()["spawned_by"] == nil {
			t.Fatalf("no field error for spawned_by: %s", bad.Raw)
		}
	})
}

// TestSpawnedByAttemptToken: a worker creating a task with its attempt token while
// running one spawns it: spawned_by (and parent_task_id) is the running task, without
// being asked; naming another task is attempt_token_scope. The worker, the pilot of
// its minion task, may not verify it.
func TestSpawnedByAttemptToken(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("lee", models.KindHuman, models.RoleLead, models.RoleExec)
		bot := e.agent("bot", models.KindWorker, "developer")
		e.agent("vic", models.KindHuman, "tester")
		e.agent("rita", models.KindHuman, "reviewer")
		ctx := context.Background()
		runner, err := e.svc.Agents.RunnerAgent(ctx)
		if err != nil {
			t.Fatal(err)
		}
		own := e.must(201, "lee", "POST", "/tasks", map[string]any{"title": "own", "assignee": "bot"}).num("id")
		other := e.must(201, "lee", "POST", "/tasks", map[string]any{"title": "other"}).num("id")
		if _, err := e.svc.Tasks.TaskAction(ctx, runner, own, models.ActStart, models.ActionInput{}); err != nil {
			t.Fatal(err)
		}
		secret, _, err := e.svc.Tokens.IssueAttemptToken(ctx, bot.ID, own, 1, 30*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		e.tokens["attempt"] = secret

		r := e.must(201, "attempt", "POST", "/tasks", map[string]any{"title": "grunt work", "approve": "any", "verify": "any"})
		if r.num("spawned_by") != own || r.num("parent_task_id") != own {
			t.Fatalf("a task created with an attempt token: %s", r.Raw)
		}
		minion := r.num("id")
		if r := e.do("attempt", "POST", "/tasks", map[string]any{"title": "x", "spawned_by": other}); r.Status != 403 || r.errRule() != models.RuleAttemptTokenScope {
			t.Fatalf("an attempt token naming another pilot task: %d %s", r.Status, r.Raw)
		}

		// The worker's own token (not the attempt's) is its identity as a person would use it.
		path := "/tasks/" + itoa(minion)
		e.must(200, "lee", "POST", path+"/assign", map[string]any{"agent": "lee"})
		e.must(200, "lee", "POST", path+"/start", nil)
		e.must(200, "bot", "POST", path+"/submit", map[string]any{"summary": "the pilot hands it in"})
		e.must(200, "rita", "POST", path+"/approve", nil)
		e.refused("bot", minion, "verify", map[string]any{"notes": "fine"}, models.RulePilotNotVerifier)
		e.must(200, "vic", "POST", path+"/verify", map[string]any{"notes": "checked"})
	})
}
