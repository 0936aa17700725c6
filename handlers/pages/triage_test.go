package pages_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// TestInboxShowsTheTriage: a blocked task the triage escalated shows the triage's
// summary and recommended action on its inbox item, escaped; one whose triage failed
// says so. Every item shows how long it has waited and when it is due, an overdue
// one marked.
func TestInboxShowsTheTriage(t *testing.T) {
	e := newEnv(t, "sqlite")
	e.team()
	ctx := context.Background()
	block := func(title string, tri *models.Triage) *models.Task {
		tk, err := e.svc.Tasks.CreateTask(ctx, models.System, models.TaskSpec{Title: title, Brief: "b", Role: "developer", Assignee: "bot"})
		must(t, err)
		e.act("runner", tk.ID, models.ActStart, models.ActionInput{})
		runner, _ := e.svc.Agents.RunnerAgent(ctx)
		must(t, e.svc.Store().InTx(ctx, func(tx models.Tx) error {
			lt, err := tx.LockTask(ctx, tk.ID)
			if err != nil {
				return err
			}
			lt.Triage = tri
			return e.svc.Attempts.BlockTask(ctx, tx, runner, lt, []models.BlockedAttempt{{Attempt: 1, Stage: models.StageVerify, Failure: "exit 1"}})
		}))
		return tk
	}
	block("Escalated", &models.Triage{Status: models.TriageEscalate, At: time.Now(), Summary: "The spec <b>contradicts</b> the tests.",
		Recommend: models.RecommendReassign, Role: "architect"})
	block("Unanswered", &models.Triage{Status: models.TriageFailed, At: time.Now(), Error: "malformed triage decision: no JSON"})

	old := block("Old", nil)
	must(t, e.db.CreateInboxItem(ctx, &models.InboxItem{Kind: models.InboxAdvisory, TaskID: old.ID, Title: "look at this",
		CreatedAt: time.Now().Add(-80 * time.Hour)}))

	pg := e.browser().login("exec").get("/inbox")
	for _, want := range []string{`data-rel="waiting"`, `>waiting 3d 8h</time>`, `data-testid="inbox-due" data-state="overdue"`, `data-testid="inbox-due">due `,
		`data-testid="inbox-triage" data-state="escalate"`, "The spec &lt;b&gt;contradicts&lt;/b&gt; the tests.",
		"reassign to the role architect", `data-state="failed"`, "The triage gave no usable answer: malformed triage decision"} {
		if !strings.Contains(pg.Body, want) {
			t.Fatalf("the inbox lacks %q", want)
		}
	}
}

// TestExecAnswersAQuestionInTheInbox: a waiting task's question is in the inbox with
// an Answer form; the exec's answer sends the task back to its worker and resolves
// the item; an empty answer is refused and changes nothing.
func TestExecAnswersAQuestionInTheInbox(t *testing.T) {
	e := newEnv(t, "sqlite")
	e.team()
	ctx := context.Background()
	tk, err := e.svc.Tasks.CreateTask(ctx, models.System, models.TaskSpec{Title: "Pick a database", Brief: "b", Role: "developer", Assignee: "bot"})
	must(t, err)
	e.act("runner", tk.ID, models.ActStart, models.ActionInput{})
	runner, _ := e.svc.Agents.RunnerAgent(ctx)
	_, err = e.svc.Tasks.TaskAction(ctx, runner, tk.ID, models.ActAsk, models.ActionInput{Question: "Which <database>?", Attempt: 1})
	must(t, err)

	exec := e.browser().login("exec")
	pg := exec.get("/inbox")
	for _, want := range []string{"Questions from workers", "Task " + itoa64(tk.ID) + " asks: Which &lt;database&gt;?", "/tasks/" + itoa64(tk.ID) + "/action/answer"} {
		if !strings.Contains(pg.Body, want) {
			t.Fatalf("the inbox lacks %q", want)
		}
	}
	events := e.eventCount()
	exec.post("/tasks/"+itoa64(tk.ID)+"/action/answer", url.Values{"reason": {"  "}, "back": {"/inbox"}})
	if e.state(tk.ID) != models.TaskWaiting || e.eventCount() != events {
		t.Fatalf("an empty answer: %s, events %d → %d", e.state(tk.ID), events, e.eventCount())
	}
	exec.post("/tasks/"+itoa64(tk.ID)+"/action/answer", url.Values{"reason": {"PostgreSQL"}, "back": {"/inbox"}})
	after, err := e.db.GetTask(ctx, tk.ID)
	must(t, err)
	if after.State != models.TaskAssigned || len(after.Questions) != 1 || after.Questions[0].Answer != "PostgreSQL" || after.Questions[0].AnsweredBy != "exec" {
		t.Fatalf("after the answer: %s %+v", after.State, after.Questions)
	}
	if strings.Contains(exec.get("/inbox").Body, "asks: Which") {
		t.Fatal("the answered question stays in the inbox")
	}
}
