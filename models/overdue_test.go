package models_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// TestNothingWaitsUnseen: an inbox item past its kind's deadline is announced again
// and escalated to the lead, once however many sweeps (or processes) see it; an item
// within its deadline, or of a kind without one, is left alone; a question unanswered
// for twice its deadline blocks its task with stage question.
func TestNothingWaitsUnseen(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			e := newInboxEnv(t, d)
			runner, err := e.svc.Agents.RunnerAgent(e.ctx)
			must(t, err)
			asked, _ := e.workerTask("asks")
			_, err = e.svc.Tasks.TaskAction(e.ctx, runner, asked.ID, models.ActAsk, models.ActionInput{Question: "Which region?", Attempt: 1})
			must(t, err)
			advisory, _ := e.workerTask("advises")
			must(t, e.db.CreateInboxItem(e.ctx, &models.InboxItem{Kind: models.InboxAdvisory, TaskID: advisory.ID, Title: "look", CreatedAt: time.Now()}))

			deadlines := models.Deadlines{models.InboxQuestion: time.Hour, models.InboxAdvisory: 72 * time.Hour}
			now := time.Now().UTC()
			if res, err := e.svc.Inbox.SweepInbox(e.ctx, now, deadlines); err != nil || res != (models.SweepResult{}) {
				t.Fatalf("a sweep before any deadline: %+v %v", res, err)
			}
			later := now.Add(90 * time.Minute)
			for i := range 2 {
				res, err := e.svc.Inbox.SweepInbox(e.ctx, later, deadlines)
				must(t, err)
				if want := 1 - i; res.Escalated != want || res.Expired != 0 {
					t.Fatalf("sweep %d after the question's deadline: %+v, want %d escalated", i+1, res, want)
				}
			}
			items, err := e.db.ListInbox(e.ctx, models.InboxFilter{TaskID: asked.ID, Kind: models.InboxQuestion})
			must(t, err)
			if len(items) != 1 || items[0].EscalatedAt == nil {
				t.Fatalf("the overdue question: %+v", items)
			}
			overdue, err := e.db.ListEventsOfType(e.ctx, "inbox.overdue", 0, 10)
			must(t, err)
			if len(overdue) != 1 || !strings.Contains(string(overdue[0].Data), `"escalated_to":"lead"`) {
				t.Fatalf("inbox.overdue events: %+v", overdue)
			}

			res, err := e.svc.Inbox.SweepInbox(e.ctx, now.Add(2*time.Hour+time.Minute), deadlines)
			must(t, err)
			if res.Expired != 1 {
				t.Fatalf("a sweep past twice the deadline: %+v", res)
			}
			blocked, err := e.db.GetTask(e.ctx, asked.ID)
			must(t, err)
			if blocked.State != models.TaskBlocked {
				t.Fatalf("the unanswered task is %s", blocked.State)
			}
			items, err = e.db.ListInbox(e.ctx, models.InboxFilter{TaskID: asked.ID, Kind: models.InboxBlocked})
			must(t, err)
			var p models.BlockedPayload
			if len(items) != 1 || json.Unmarshal(items[0].Payload, &p) != nil || len(p.Attempts) != 1 || p.Attempts[0].Stage != models.StageQuestion {
				t.Fatalf("blocked for its question: %+v", items)
			}
			if open, _ := e.db.ListInbox(e.ctx, models.InboxFilter{TaskID: asked.ID, Kind: models.InboxQuestion}); len(open) != 0 {
				t.Fatal("the expired question stays open")
			}
		})
	}
}

func TestParseDeadlines(t *testing.T) {
	d, err := models.ParseDeadlines("question=30m, blocked=2d, advisory=off")
	must(t, err)
	if d[models.InboxQuestion] != 30*time.Minute || d[models.InboxBlocked] != 48*time.Hour || d[models.InboxEscalation] != 24*time.Hour {
		t.Fatalf("deadlines %v", d)
	}
	if _, ok := d[models.InboxAdvisory]; ok {
		t.Fatal("advisory=off kept a deadline")
	}
	for _, bad := range []string{"questions=1h", "question", "question=-1h", "question=soon", "blocked=1.5d"} {
		if _, err := models.ParseDeadlines(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
