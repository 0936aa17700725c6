package pages_test

import (
	"net/http"
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
		pilotTask, err := e.svc.CreateTask(e.ctx(), e.agents["lena"], models.TaskSpec{Title: "The feature", Assignee: "ann", Approve: "any", Verify: "any"})
		if err != nil {
			t.Fatal(err)
		}
		e.act("ann", pilotTask.ID, models.ActStart, models.ActionInput{})
		minion, err := e.svc.CreateTask(e.ctx(), e.agents["ann"], models.TaskSpec{Title: "Generate test data", SpawnedBy: &pilotTask.ID, Approve: "any", Verify: "any"})
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
		wt, err := e.svc.CreateTask(e.ctx(), e.agents["lena"], models.TaskSpec{Title: "Worker's", Assignee: "bot"})
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
