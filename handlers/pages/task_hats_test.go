package pages_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
)

// TestTaskTimelineShowsHats: the task page names the hat of each participant — the
// pilot of a minion task, its builder, reviewer and tester — above the timeline, and
// each timeline entry names the hat its move put on ("vic as tester"; a start the
// runner took says whose builder hat it was).
func TestTaskTimelineShowsHats(t *testing.T) {
	t.Parallel()
	handlertest.ForEachDialect(t, func(t *testing.T, d string) {
		t.Parallel()
		e := newEnv(t, d)
		e.agent("lena", models.KindHuman, "lead")
		e.agent("ann", models.KindHuman, "developer")
		e.agent("bob", models.KindHuman, "developer")
		e.agent("rita", models.KindHuman, "reviewer")
		e.agent("vic", models.KindHuman, "tester")
		e.agent("bot", models.KindWorker, "developer")
		pilotTask, err := e.svc.Tasks.CreateTask(e.ctx(), e.agents["lena"], models.TaskSpec{Title: "The feature", Assignee: "ann", Approve: "any", Verify: "any"})
		if err != nil {
			t.Fatal(err)
		}
		e.act("ann", pilotTask.ID, models.ActStart, models.ActionInput{})
		minion, err := e.svc.Tasks.CreateTask(e.ctx(), e.agents["ann"], models.TaskSpec{Title: "Generate test data", SpawnedBy: &pilotTask.ID, Approve: "any", Verify: "any"})
		if err != nil {
			t.Fatal(err)
		}
		e.act("lena", minion.ID, models.ActAssign, models.ActionInput{Agent: "bob"})
		e.act("bob", minion.ID, models.ActStart, models.ActionInput{})
		e.act("ann", minion.ID, models.ActSubmit, models.ActionInput{Summary: "the minion's test data"})
		e.act("rita", minion.ID, models.ActApprove, models.ActionInput{})
		e.act("vic", minion.ID, models.ActVerify, models.ActionInput{Notes: "valid"})

		c := e.browser().login("lena")
		p := c.get("/tasks/" + itoa64(minion.ID))
		p.want(t, http.StatusOK, `data-testid="task-hats"`, `data-testid="hat-ann">ann: pilot</span>`,
			`data-testid="hat-bob">bob: builder</span>`, `data-testid="hat-rita">rita: reviewer</span>`, `data-testid="hat-vic">vic: tester</span>`,
			"bob as builder", "ann as pilot", "rita as reviewer", "vic as tester")

		// A worker's task the runner starts: the runner acts, the worker wears the hat.
		wt, err := e.svc.Tasks.CreateTask(e.ctx(), e.agents["lena"], models.TaskSpec{Title: "Worker's", Assignee: "bot"})
		if err != nil {
			t.Fatal(err)
		}
		e.act("runner", wt.ID, models.ActStart, models.ActionInput{})
		p = c.get("/tasks/" + itoa64(wt.ID))
		p.want(t, http.StatusOK, "runner (bot as builder)", `data-testid="hat-bot">bot: builder</span>`)
		if strings.Contains(p.Body, `data-testid="hat-runner"`) {
			t.Fatal("the runner is shown wearing a hat")
		}
	})
}

// TestDashboardRefusesPilotAndHatConflict: the dashboard's action forms go through the
// same rules: the pilot's verify is 403 naming pilot_not_verifier, a builder replaced
// after a block verifying is 403 naming hat_conflict, and neither changes the task.
func TestDashboardRefusesPilotAndHatConflict(t *testing.T) {
	t.Parallel()
	handlertest.ForEachDialect(t, func(t *testing.T, d string) {
		t.Parallel()
		e := newEnv(t, d)
		e.agent("lena", models.KindHuman, "lead")
		e.agent("ann", models.KindHuman, "developer")
		e.agent("bob", models.KindHuman, "developer")
		e.agent("rita", models.KindHuman, "reviewer")
		pilotTask, err := e.svc.Tasks.CreateTask(e.ctx(), e.agents["lena"], models.TaskSpec{Title: "The feature", Assignee: "ann", Approve: "any", Verify: "any"})
		if err != nil {
			t.Fatal(err)
		}
		e.act("ann", pilotTask.ID, models.ActStart, models.ActionInput{})
		minion, err := e.svc.Tasks.CreateTask(e.ctx(), e.agents["lena"], models.TaskSpec{Title: "Grunt work", Assignee: "bob", SpawnedBy: &pilotTask.ID, Approve: "any", Verify: "any"})
		if err != nil {
			t.Fatal(err)
		}
		e.act("bob", minion.ID, models.ActStart, models.ActionInput{})
		e.act("ann", minion.ID, models.ActSubmit, models.ActionInput{Summary: "done"})
		e.act("rita", minion.ID, models.ActApprove, models.ActionInput{})
		ann := e.browser().login("ann")
		ann.get("/tasks/"+itoa64(minion.ID)).want(t, http.StatusOK)
		r := ann.post("/tasks/"+itoa64(minion.ID)+"/action/verify", url.Values{"notes": {"my minion did well"}})
		r.want(t, http.StatusForbidden, `data-testid="error-rule">pilot_not_verifier<`)
		if e.state(minion.ID) != models.TaskCompleted {
			t.Fatal("a refused verify changed the task")
		}

		// bob builds a task, is blocked, and lena gives it to ann: bob may not verify it.
		other, err := e.svc.Tasks.CreateTask(e.ctx(), e.agents["lena"], models.TaskSpec{Title: "Form", Assignee: "bob", Approve: "any", Verify: "any"})
		if err != nil {
			t.Fatal(err)
		}
		e.act("bob", other.ID, models.ActStart, models.ActionInput{})
		e.act("runner", other.ID, models.ActBlock, models.ActionInput{})
		e.act("lena", other.ID, models.ActReassign, models.ActionInput{Agent: "ann", Reason: "fresh eyes"})
		e.act("ann", other.ID, models.ActStart, models.ActionInput{})
		e.act("ann", other.ID, models.ActSubmit, models.ActionInput{Summary: "done"})
		e.act("rita", other.ID, models.ActApprove, models.ActionInput{})
		bob := e.browser().login("bob")
		bob.get("/tasks/"+itoa64(other.ID)).want(t, http.StatusOK)
		bob.post("/tasks/"+itoa64(other.ID)+"/action/verify", url.Values{"notes": {"looks fine"}}).want(t, http.StatusForbidden, `data-testid="error-rule">hat_conflict<`)
		if e.state(other.ID) != models.TaskCompleted {
			t.Fatal("a refused verify changed the task")
		}
	})
}

// TestTaskPageOffersOnlyWhatThePilotAndHatRulesAllow: the task page's buttons follow
// the pilot and hat rules, not only the separation of duties (models.Service.
// ActionsFor). The pilot of a minion task is offered Submit although it did not build
// it, then neither Approve after submitting it nor Verify once approved; a builder
// replaced after a block is not offered Verify. Each refused form is checked by the
// service (TestDashboardRefusesPilotAndHatConflict); here no button leads to it.
func TestTaskPageOffersOnlyWhatThePilotAndHatRulesAllow(t *testing.T) {
	t.Parallel()
	handlertest.ForEachDialect(t, func(t *testing.T, d string) {
		t.Parallel()
		e := newEnv(t, d)
		e.agent("lena", models.KindHuman, "lead")
		e.agent("ann", models.KindHuman, "developer")
		e.agent("bob", models.KindHuman, "developer")
		e.agent("rita", models.KindHuman, "reviewer")
		buttons := func(b *browser, id int64) string {
			t.Helper()
			r := b.get("/tasks/" + itoa64(id))
			r.want(t, http.StatusOK)
			var got []string
			for _, a := range models.Actions {
				if strings.Contains(r.Body, `data-testid="action-form-`+string(a)+`"`) {
					got = append(got, string(a))
				}
			}
			return strings.Join(got, ",")
		}
		pilotTask, err := e.svc.Tasks.CreateTask(e.ctx(), e.agents["lena"], models.TaskSpec{Title: "The feature", Assignee: "ann", Approve: "any", Verify: "any"})
		if err != nil {
			t.Fatal(err)
		}
		e.act("ann", pilotTask.ID, models.ActStart, models.ActionInput{})
		minion, err := e.svc.Tasks.CreateTask(e.ctx(), e.agents["lena"], models.TaskSpec{Title: "Grunt work", Assignee: "bob", SpawnedBy: &pilotTask.ID, Approve: "any", Verify: "any"})
		if err != nil {
			t.Fatal(err)
		}
		e.act("bob", minion.ID, models.ActStart, models.ActionInput{})
		ann := e.browser().login("ann")
		if got := buttons(ann, minion.ID); got != "submit" {
			t.Fatalf("the pilot's buttons on its minion task in progress: %q, want submit", got)
		}
		e.act("ann", minion.ID, models.ActSubmit, models.ActionInput{Summary: "done"})
		if got := buttons(ann, minion.ID); strings.Contains(got, "approve") {
			t.Fatalf("the pilot who submitted is offered %q", got)
		}
		rita := e.browser().login("rita")
		if got := buttons(rita, minion.ID); !strings.Contains(got, "approve") {
			t.Fatalf("the reviewer is not offered approve: %q", got)
		}
		e.act("rita", minion.ID, models.ActApprove, models.ActionInput{})
		if got := buttons(ann, minion.ID); strings.Contains(got, "verify") {
			t.Fatalf("the pilot is offered %q on its approved minion task", got)
		}

		other, err := e.svc.Tasks.CreateTask(e.ctx(), e.agents["lena"], models.TaskSpec{Title: "Form", Assignee: "bob", Approve: "any", Verify: "any"})
		if err != nil {
			t.Fatal(err)
		}
		e.act("bob", other.ID, models.ActStart, models.ActionInput{})
		e.act("runner", other.ID, models.ActBlock, models.ActionInput{})
		e.act("lena", other.ID, models.ActReassign, models.ActionInput{Agent: "ann", Reason: "fresh eyes"})
		e.act("ann", other.ID, models.ActStart, models.ActionInput{})
		e.act("ann", other.ID, models.ActSubmit, models.ActionInput{Summary: "done"})
		e.act("rita", other.ID, models.ActApprove, models.ActionInput{})
		bob := e.browser().login("bob")
		if got := buttons(bob, other.ID); strings.Contains(got, "verify") {
			t.Fatalf("the builder replaced after a block is offered %q", got)
		}
		if got := buttons(e.browser().login("lena"), other.ID); !strings.Contains(got, "verify") {
			t.Fatalf("the lead may verify (she neither built nor approved it) but is offered %q", got)
		}
	})
}
