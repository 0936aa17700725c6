package models_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store/storetest"
)

// reviewFixEnv has the runner start a worker task and add a review's fix task for it,
// as a failed review round with rounds left does; it returns the reviewed task, the
// fix and the runner.
func reviewFixEnv(e *inboxEnv) (*models.Task, *models.Task, *models.Agent) {
	e.t.Helper()
	task, runner := e.workerTask("write the runbook")
	var fix *models.Task
	err := e.db.InTx(e.ctx, func(tx models.Tx) error {
		lt, err := tx.LockTask(e.ctx, task.ID)
		if err != nil {
			return err
		}
		fix, err = e.svc.Attempts.AddReviewFixTask(e.ctx, tx, runner, lt, models.ReviewFix{Round: 1, MaxRounds: 3,
			Findings: "- the rollback plan is missing", Tasks: []string{"### Task: write the runbook"}})
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return task, fix, runner
}

// TestCancelledReviewFixBlocksTheReviewedTask: cancelling a review's fix task (here
// by the lead, as any interface does through the service) does not leave the reviewed
// task waiting forever for a dependency that will never be verified. In the same
// transaction the reviewed task stops depending on the fix and is blocked with stage
// review and the reason in an open inbox item; a retry with guidance makes it ready
// for a worker again.
func TestCancelledReviewFixBlocksTheReviewedTask(t *testing.T) {
	for _, d := range storetest.Dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newInboxEnv(t, d)
			task, fix, _ := reviewFixEnv(e)
			if got, _ := e.db.GetTask(e.ctx, task.ID); got.State != models.TaskInProgress || !slices.Contains(got.DependsOn, fix.ID) {
				t.Fatalf("before the cancel: %s, depends on %v", got.State, got.DependsOn)
			}
			if _, err := e.svc.Tasks.TaskAction(e.ctx, e.agents["lead"], fix.ID, models.ActCancel, models.ActionInput{Reason: "not worth it"}); err != nil {
				t.Fatal(err)
			}
			got, err := e.db.GetTask(e.ctx, task.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != models.TaskBlocked || slices.Contains(got.DependsOn, fix.ID) || got.LeaseOwner != "" {
				t.Fatalf("reviewed task after its fix was cancelled: state %s, depends on %v, lease %q", got.State, got.DependsOn, got.LeaseOwner)
			}
			item := e.onlyItem(task.ID, models.InboxBlocked)
			want := "its review fix task " + strconv.FormatInt(fix.ID, 10) + " was cancelled"
			if !strings.Contains(item.Title, want) {
				t.Fatalf("inbox title %q lacks %q", item.Title, want)
			}
			var p models.BlockedPayload
			if err := json.Unmarshal(item.Payload, &p); err != nil {
				t.Fatal(err)
			}
			if n := len(p.Attempts); n != 1 || p.Attempts[0].Stage != models.StageReview || p.Attempts[0].Failure != want {
				t.Fatalf("blocked payload %+v", p.Attempts)
			}
			// A retry needs guidance (the worker runs again) and makes the task ready.
			if _, err := e.svc.Tasks.TaskAction(e.ctx, e.agents["exec"], task.ID, models.ActRetry, models.ActionInput{}); models.ErrorCode(err) != models.EINVALID {
				t.Fatalf("retry without guidance: %v", err)
			}
			if _, err := e.svc.Tasks.TaskAction(e.ctx, e.agents["exec"], task.ID, models.ActRetry, models.ActionInput{Reason: "add the rollback plan yourself"}); err != nil {
				t.Fatal(err)
			}
			if ready := e.ready(); !slices.Contains(ready, task.ID) {
				t.Fatalf("retried task %d is not ready for a worker: ready %v", task.ID, ready)
			}
		})
	}
}

// TestCancelledReviewFixLeavesASettledTaskAlone: once the reviewed task no longer
// waits (here a lead cancelled it first), cancelling its fix changes nothing else.
func TestCancelledReviewFixLeavesASettledTaskAlone(t *testing.T) {
	e := newInboxEnv(t, storetest.Dialects()[0])
	task, fix, _ := reviewFixEnv(e)
	if _, err := e.svc.Tasks.TaskAction(e.ctx, e.agents["lead"], task.ID, models.ActCancel, models.ActionInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Tasks.TaskAction(e.ctx, e.agents["lead"], fix.ID, models.ActCancel, models.ActionInput{}); err != nil {
		t.Fatal(err)
	}
	got, err := e.db.GetTask(e.ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != models.TaskCancelled {
		t.Fatalf("reviewed task %s", got.State)
	}
	items, err := e.db.ListInbox(e.ctx, models.InboxFilter{TaskID: task.ID, Kind: models.InboxBlocked})
	if err != nil || len(items) != 0 {
		t.Fatalf("blocked items %v (%v)", items, err)
	}
}
