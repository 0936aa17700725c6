package models_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store/storetest"
)

// TestImpossibleClaimRules: only the runner records a claim; the task blocks at stage
// impossible with the reason in its inbox item, accepting it is refused and answering
// it is offered (and only on a claim: a task blocked by failed work takes a retry); an
// amendment needs a new, non-empty brief from a lead, an exec or the creator; a retry
// closes the claim. On both dialects.
func TestImpossibleClaimRules(t *testing.T) {
	for _, d := range storetest.Dialects() {
		t.Run(d, func(t *testing.T) {
			e := newInboxEnv(t, d)
			lead, exec, dev := e.agents["lead"], e.agents["exec"], e.agents["dev"]
			claimed := func(title string) *models.Task {
				task, runner := e.workerTask(title)
				if err := e.claim(lead, task.ID); models.ErrorCode(err) != models.EFORBIDDEN {
					t.Fatalf("a person recorded a claim: %v", err)
				}
				if err := e.claim(runner, task.ID); err != nil {
					t.Fatal(err)
				}
				got, err := e.db.GetTask(e.ctx, task.ID)
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			tk := claimed("add")
			if q := tk.OpenImpossible(); tk.State != models.TaskBlocked || q == nil || q.Text != "the tests contradict the spec" || tk.OpenQuestion() != nil {
				t.Fatalf("task %s, claim %+v", tk.State, tk.Questions)
			}
			if it := e.onlyItem(tk.ID, models.InboxBlocked); !strings.Contains(it.Title, "cannot be done as specified") || !strings.Contains(it.Title, "the tests contradict the spec") {
				t.Fatalf("inbox title %q", it.Title)
			}
			if !models.MayTake(lead, tk, models.ActAnswer, nil, 4) || models.MayTake(exec, tk, models.ActAccept, nil, 4) || !models.MayTake(exec, tk, models.ActAmend, nil, 4) {
				t.Fatal("the forms offered on a claim are wrong")
			}
			if _, err := e.svc.Tasks.TaskAction(e.ctx, exec, tk.ID, models.ActAccept, models.ActionInput{Reason: "fine"}); models.ErrorCode(err) != models.ECONFLICT {
				t.Fatalf("accept: %v", err)
			}
			for _, c := range []struct {
				who   *models.Agent
				brief string
				code  string
			}{{dev, "A new brief.", models.EFORBIDDEN}, {lead, "  ", models.EINVALID}, {lead, tk.Brief, models.EINVALID}} {
				if _, err := e.svc.Tasks.TaskAction(e.ctx, c.who, tk.ID, models.ActAmend, models.ActionInput{Brief: c.brief}); models.ErrorCode(err) != c.code {
					t.Fatalf("amend by %s with %q: %v, want %s", c.who.Name, c.brief, err, c.code)
				}
			}
			// A retry answers the claim by guidance: it is closed, with the guidance.
			back, err := e.svc.Tasks.TaskAction(e.ctx, lead, tk.ID, models.ActRetry, models.ActionInput{Reason: "use the spec"})
			if err != nil {
				t.Fatal(err)
			}
			if q := back.Questions[len(back.Questions)-1]; back.State != models.TaskAssigned || q.AnsweredAt == nil || !strings.Contains(q.Answer, "use the spec") {
				t.Fatalf("after the retry: %s, %+v", back.State, q)
			}
			workBlock(t, e)
		})
	}
}

// workBlock: a task blocked by failed work has no claim to answer, and amending it
// sends it back with the new brief.
func workBlock(t *testing.T, e *inboxEnv) {
	lead, exec := e.agents["lead"], e.agents["exec"]
	work, runner := e.workerTask("sort")
	if err := e.db.InTx(e.ctx, func(tx models.Tx) error {
		lt, err := tx.LockTask(e.ctx, work.ID)
		if err != nil {
			return err
		}
		return e.svc.Attempts.BlockTask(e.ctx, tx, runner, lt, []models.BlockedAttempt{{Attempt: 1, Stage: models.StageVerify, Failure: "go test failed"}})
	}); err != nil {
		t.Fatal(err)
	}
	blocked, err := e.db.GetTask(e.ctx, work.ID)
	if err != nil {
		t.Fatal(err)
	}
	if models.MayTake(lead, blocked, models.ActAnswer, nil, 4) {
		t.Fatal("answer is offered on a task blocked by failed work")
	}
	if _, err := e.svc.Tasks.TaskAction(e.ctx, lead, work.ID, models.ActAnswer, models.ActionInput{Answer: "x"}); models.ErrorCode(err) != models.ECONFLICT {
		t.Fatalf("answering a work block: %v", err)
	}
	// Amending sends it back with the new brief.
	amended, err := e.svc.Tasks.TaskAction(e.ctx, exec, work.ID, models.ActAmend, models.ActionInput{Brief: "Sort descending."})
	if err != nil {
		t.Fatal(err)
	}
	if amended.State != models.TaskAssigned || amended.Brief != "Sort descending." || e.openItems(work.ID) != 0 {
		t.Fatalf("amended: %s %q", amended.State, amended.Brief)
	}
}

// claim records, as actor, the claim that task id cannot be done as specified.
func (e *inboxEnv) claim(actor *models.Agent, id int64) error {
	return e.db.InTx(e.ctx, func(tx models.Tx) error {
		lt, err := tx.LockTask(e.ctx, id)
		if err != nil {
			return err
		}
		return e.svc.Attempts.BlockImpossibleTask(e.ctx, tx, actor, lt, 1, "the tests contradict the spec", nil)
	})
}

// openItems counts task id's open inbox items.
func (e *inboxEnv) openItems(id int64) int {
	e.t.Helper()
	items, err := e.db.ListInbox(e.ctx, models.InboxFilter{TaskID: id})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(items)
}
