package handlers_test

import (
	"testing"

	"github.com/countersign/countersign/models"
)

// minionEnv sets up the goal-verification design's minion example: lead c, pilot a on
// its own task (assigned, and started when started is true), minion m, checker b, and
// a minion task spawned by a's task, built by m and submitted by a as its pilot. It
// returns a's task and the minion task.
func minionEnv(t *testing.T, e *apiEnv, started bool) (own, minion int64) {
	t.Helper()
	e.agent("c", models.KindHuman, models.RoleLead)
	e.agent("a", models.KindHuman, "developer", "reviewer")
	e.agent("b", models.KindHuman, "tester")
	e.agent("m", models.KindHuman, "developer")
	own = e.must(201, "c", "POST", "/tasks", map[string]any{"title": "Create login form component", "assignee": "a", "approve": "any", "verify": "any"}).num("id")
	if started {
		e.must(200, "a", "POST", "/tasks/"+itoa(own)+"/start", nil)
	}
	minion = e.must(201, "a", "POST", "/tasks", map[string]any{"title": "Generate test data", "spawned_by": own, "approve": "any", "verify": "any"}).num("id")
	path := "/tasks/" + itoa(minion)
	e.must(200, "c", "POST", path+"/assign", map[string]any{"agent": "m"})
	e.must(200, "m", "POST", path+"/start", nil)
	if r := e.must(200, "a", "POST", path+"/submit", map[string]any{"summary": "the pilot hands it in"}); r.str("state") != "review" {
		t.Fatalf("the pilot's submission: %s", r.Raw)
	}
	return own, minion
}

// TestPilotMayNotApproveItsSubmission (S1): the pilot who submitted a minion task for
// review may not approve it too (approver_not_submitter), although separation of
// duties (which looks at the builder) and the default hats (pilot and reviewer do not
// conflict) would let it; someone else approves, and the pilot still may not verify.
func TestPilotMayNotApproveItsSubmission(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		_, minion := minionEnv(t, e, true)
		e.refused("a", minion, "approve", nil, models.RuleApproverNotSubmitter)
		if r := e.must(200, "c", "POST", "/tasks/"+itoa(minion)+"/approve", nil); r.str("state") != "completed" || r.num("approver_id") != e.agents["c"].ID {
			t.Fatalf("the lead's approval: %s", r.Raw)
		}
		e.refused("a", minion, "verify", map[string]any{"notes": "fine"}, models.RulePilotNotVerifier)
		e.must(200, "b", "POST", "/tasks/"+itoa(minion)+"/verify", map[string]any{"notes": "checked"})
	})
}

// TestFormerPilotMayNotVerify (S2): the spawning task is blocked and reassigned after
// its first builder, the pilot, submitted the minion task; the former pilot is no
// longer the agent on the spawning task but wore the pilot hat on the minion task,
// so it may still not verify it nor reject its verification (pilot_not_verifier);
// neither may the new pilot; the checker does.
func TestFormerPilotMayNotVerify(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("p", models.KindHuman, "developer")
		own, minion := minionEnv(t, e, true)
		e.blockAsRunner(own)
		e.must(200, "c", "POST", "/tasks/"+itoa(own)+"/reassign", map[string]any{"agent": "p", "reason": "a moves on"})
		e.must(200, "p", "POST", "/tasks/"+itoa(own)+"/start", nil)
		e.must(200, "c", "POST", "/tasks/"+itoa(minion)+"/approve", nil)
		e.refused("a", minion, "verify", map[string]any{"notes": "my minion did well"}, models.RulePilotNotVerifier)
		e.refused("a", minion, "reject-verification", map[string]any{"reason": "redo it"}, models.RulePilotNotVerifier)
		e.refused("p", minion, "verify", map[string]any{"notes": "fine"}, models.RulePilotNotVerifier)
		if r := e.must(200, "b", "POST", "/tasks/"+itoa(minion)+"/verify", map[string]any{"notes": "checked"}); r.str("state") != "verified" {
			t.Fatalf("the checker's verification: %s", r.Raw)
		}
	})
}

// TestSpawnedByNeedsThePilotsTask (S3): without an attempt token, only the agent on
// the spawning task (its assignee or builder) or a lead may name it as spawned_by;
// anyone else is 403 spawned_by_not_pilot and no task is created; an unknown id is
// still 422 naming the field.
func TestSpawnedByNeedsThePilotsTask(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("c", models.KindHuman, models.RoleLead)
		e.agent("a", models.KindHuman, "developer")
		e.agent("x", models.KindHuman, "developer", "tester")
		own := e.must(201, "c", "POST", "/tasks", map[string]any{"title": "own", "assignee": "a"}).num("id")
		before := len(e.must(200, "c", "GET", "/tasks", nil).Body["tasks"].([]any))
		r := e.do("x", "POST", "/tasks", map[string]any{"title": "steered", "spawned_by": own})
		if r.Status != 403 || r.errRule() != models.RuleSpawnedByNotPilot {
			t.Fatalf("a stranger naming a's task as spawned_by: %d %s", r.Status, r.Raw)
		}
		if n := len(e.must(200, "c", "GET", "/tasks", nil).Body["tasks"].([]any)); n != before {
			t.Fatalf("a refused create left a task: %d tasks, had %d", n, before)
		}
		if bad := e.must(422, "x", "POST", "/tasks", map[string]any{"title": "orphan", "spawned_by": 99999}); bad.fields()["spawned_by"] == nil {
			t.Fatalf("no field error for spawned_by: %s", bad.Raw)
		}
		// The assignee before it starts, the builder after, and a lead may.
		if r := e.must(201, "a", "POST", "/tasks", map[string]any{"title": "by the assignee", "spawned_by": own}); r.num("spawned_by") != own {
			t.Fatalf("the assignee's minion: %s", r.Raw)
		}
		e.must(200, "a", "POST", "/tasks/"+itoa(own)+"/start", nil)
		e.must(201, "a", "POST", "/tasks", map[string]any{"title": "by the builder", "spawned_by": own})
		e.must(201, "c", "POST", "/tasks", map[string]any{"title": "by the lead", "spawned_by": own})
	})
}

// TestFormerPilotWhoNeverSubmittedMayNotVerify: the pilot is whoever was on the
// spawning task, now or before — even one who never touched the minion task. a builds
// the task that spawned the minion, m builds and submits the minion itself, and a's
// task is blocked and given to p: a may still not verify the minion
// (pilot_not_verifier), and neither may p; the tester may.
func TestFormerPilotWhoNeverSubmittedMayNotVerify(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("c", models.KindHuman, models.RoleLead)
		e.agent("a", models.KindHuman, "developer", "reviewer")
		e.agent("b", models.KindHuman, "tester")
		e.agent("m", models.KindHuman, "developer")
		e.agent("p", models.KindHuman, "developer")
		own := e.must(201, "c", "POST", "/tasks", map[string]any{"title": "Create login form component", "assignee": "a", "approve": "any", "verify": "any"}).num("id")
		e.must(200, "a", "POST", "/tasks/"+itoa(own)+"/start", nil)
		minion := e.must(201, "a", "POST", "/tasks", map[string]any{"title": "Generate test data", "spawned_by": own, "approve": "any", "verify": "any"}).num("id")
		path := "/tasks/" + itoa(minion)
		e.must(200, "c", "POST", path+"/assign", map[string]any{"agent": "m"})
		e.must(200, "m", "POST", path+"/start", nil)
		e.must(200, "m", "POST", path+"/submit", map[string]any{"summary": "done"})
		e.blockAsRunner(own)
		e.must(200, "c", "POST", "/tasks/"+itoa(own)+"/reassign", map[string]any{"agent": "p", "reason": "a moves on"})
		e.must(200, "p", "POST", "/tasks/"+itoa(own)+"/start", nil)
		e.must(200, "c", "POST", path+"/approve", nil)
		e.refused("a", minion, "verify", map[string]any{"notes": "my minion did well"}, models.RulePilotNotVerifier)
		e.refused("p", minion, "verify", map[string]any{"notes": "fine"}, models.RulePilotNotVerifier)
		if r := e.must(200, "b", "POST", path+"/verify", map[string]any{"notes": "checked"}); r.str("state") != "verified" {
			t.Fatalf("the tester's verification: %s", r.Raw)
		}
	})
}
