package handlers_test

import (
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
)

// blockAsRunner blocks an in-progress task as the runner does when its attempts run
// out: the only way a human-built task gets another builder.
func (e *apiEnv) blockAsRunner(id int64) {
	e.t.Helper()
	ctx := context.Background()
	runner, err := e.svc.Agents.RunnerAgent(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.svc.Tasks.TaskAction(ctx, runner, id, models.ActBlock, models.ActionInput{}); err != nil {
		e.t.Fatal(err)
	}
}

// refused sends an action that must be 403 naming rule and leave the task and the
// events as they were.
func (e *apiEnv) refused(as string, id int64, action string, body map[string]any, rule string) {
	e.t.Helper()
	before, events := e.taskState(id), e.eventCount()
	r := e.do(as, "POST", "/tasks/"+itoa(id)+"/"+action, body)
	if r.Status != 403 || r.errRule() != rule {
		e.t.Fatalf("%s %s task %d: %d rule %q, want 403 %q: %s", as, action, id, r.Status, r.errRule(), rule, r.Raw)
	}
	if e.taskState(id) != before || e.eventCount() != events {
		e.t.Fatalf("a refused %s changed the task or wrote events", action)
	}
}

// TestHatConflictsDefault: with the default hats (tester conflicts with builder) the
// rule holds on the task whatever its history, where separation of duties looks only
// at the current builder: a builder replaced after a block may not verify, a verifier
// who rejected the work may not be assigned to build it; the refusal names
// hat_conflict, and each move's event records the hat it put on.
func TestHatConflictsDefault(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("lena", models.KindHuman, models.RoleLead)
		e.agent("bob", models.KindHuman, "developer")
		e.agent("carl", models.KindHuman, "developer")
		e.agent("rita", models.KindHuman, "reviewer")
		e.agent("vic", models.KindHuman, "tester", "developer")
		id := e.must(201, "lena", "POST", "/tasks", map[string]any{"title": "Login form", "assignee": "bob", "approve": "any", "verify": "any"}).num("id")
		path := "/tasks/" + itoa(id)
		e.must(200, "bob", "POST", path+"/start", nil)
		e.blockAsRunner(id) // bob's attempts ran out
		e.must(200, "lena", "POST", path+"/reassign", map[string]any{"agent": "carl", "reason": "fresh eyes"})
		e.must(200, "carl", "POST", path+"/start", nil)
		e.must(200, "carl", "POST", path+"/submit", map[string]any{"summary": "done"})
		e.must(200, "rita", "POST", path+"/approve", nil)
		// bob is neither the builder nor the approver now: separation of duties would let
		// him verify; he wore the builder hat on this task.
		e.refused("bob", id, "verify", map[string]any{"notes": "looks fine"}, models.RuleHatConflict)
		e.refused("bob", id, "reject-verification", map[string]any{"reason": "no"}, models.RuleHatConflict)
		e.must(200, "vic", "POST", path+"/reject-verification", map[string]any{"reason": "the email field accepts abc"})
		e.blockAsRunner(id)
		// vic wore the tester hat: he may not be made its builder.
		e.refused("lena", id, "reassign", map[string]any{"agent": "vic", "reason": "vic knows the bug"}, models.RuleHatConflict)
		e.must(200, "lena", "POST", path+"/reassign", map[string]any{"agent": "carl", "reason": "fix the email check"})

		hats := map[string]string{}
		for _, ev := range eventsOfTask(t, e, id) {
			if hat, who, ok := models.EventHat(ev); ok {
				hats[ev.Type+"/"+nameOf(e, who)] = hat
			}
		}
		for k, want := range map[string]string{"task.started/bob": "builder", "task.started/carl": "builder", "task.submitted/carl": "builder",
			"task.approved/rita": "reviewer", "task.verification_rejected/vic": "tester"} {
			if hats[k] != want {
				t.Fatalf("event %s recorded hat %q, want %q (all: %v)", k, hats[k], want, hats)
			}
		}
	})
}

// TestHatConflictsEditable: the hats are project rules. Declaring that tester also
// conflicts with reviewer stops a lead who approved from verifying in a two-person
// team (which separation of duties allows); a role declared as a hat (auditor, in
// conflict with builder) keeps its holders from building. A bad table is 422 naming
// the field.
func TestHatConflictsEditable(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("lena", models.KindHuman, models.RoleLead)
		e.agent("bob", models.KindHuman, "developer")
		rules := e.must(200, "lena", "GET", "/rules", nil).Body
		rules["hats"] = []any{
			map[string]any{"name": "builder"}, map[string]any{"name": "reviewer"},
			map[string]any{"name": "tester", "conflicts_with": []string{"builder", "reviewer"}},
			map[string]any{"name": "auditor", "conflicts_with": []string{"builder"}},
		}
		e.must(200, "lena", "PUT", "/rules", rules)

		id := e.must(201, "lena", "POST", "/tasks", map[string]any{"title": "Fix the CSS", "assignee": "bob", "approve": "any", "verify": "any"}).num("id")
		path := "/tasks/" + itoa(id)
		e.must(200, "bob", "POST", path+"/start", nil)
		e.must(200, "bob", "POST", path+"/submit", nil)
		e.must(200, "lena", "POST", path+"/approve", nil)
		e.refused("lena", id, "verify", map[string]any{"notes": "approved and verified"}, models.RuleHatConflict)
		r := e.do("lena", "POST", path+"/verify", map[string]any{"notes": "x"})
		if msg := r.errField("message"); msg == "" || !strings.Contains(msg, `"tester"`) || !strings.Contains(msg, `"reviewer"`) {
			t.Fatalf("the refusal does not name the hats: %s", r.Raw)
		}

		e.agent("ann", models.KindHuman, "developer", "auditor")
		other := e.must(201, "lena", "POST", "/tasks", map[string]any{"title": "Audit trail", "approve": "any", "verify": "any"}).num("id")
		e.refused("lena", other, "assign", map[string]any{"agent": "ann"}, models.RuleHatConflict)
		e.must(200, "lena", "POST", "/tasks/"+itoa(other)+"/assign", map[string]any{"agent": "bob"})

		rules["hats"] = []any{map[string]any{"name": "tester", "conflicts_with": []string{"tester", "nobody"}}, map[string]any{"name": "Tester"}}
		bad := e.must(422, "lena", "PUT", "/rules", rules)
		for _, f := range []string{"hats[0].conflicts_with[0]", "hats[0].conflicts_with[1]", "hats[1].name"} {
			if bad.fields()[f] == nil {
				t.Fatalf("no field error for %s: %s", f, bad.Raw)
			}
		}
	})
}

// eventsOfTask returns the stored events of one task, oldest first.
func eventsOfTask(t *testing.T, e *apiEnv, id int64) []models.Event {
	t.Helper()
	evs, err := e.db.ListTaskEvents(context.Background(), id, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// nameOf names an agent of the test by id.
func nameOf(e *apiEnv, id int64) string {
	for n, a := range e.agents {
		if a.ID == id {
			return n
		}
	}
	return "?"
}
