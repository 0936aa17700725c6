package models_test

import (
	"slices"
	"strconv"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/models/store/storetest"
)

// queueEnv is an inboxEnv (lead, exec, dev, bot) with two testers: tess, and dana, a
// developer who is a tester too and must never see her own work to verify.
func newQueueEnv(t *testing.T, dialect string) *inboxEnv {
	t.Helper()
	e := newInboxEnv(t, dialect)
	for _, a := range []*models.Agent{
		{Name: "tess", Kind: models.KindHuman, Roles: []string{"tester"}},
		{Name: "dana", Kind: models.KindHuman, Roles: []string{"developer", "tester"}},
	} {
		if err := e.svc.Agents.CreateAgent(e.ctx, models.System, a, "correct horse battery"); err != nil {
			t.Fatal(err)
		}
		e.agents[a.Name] = a
	}
	return e
}

// queue returns what waits on name, by kind and task or goal id ("blocked:3").
func (e *inboxEnv) queue(name string) map[string]models.QueueItem {
	e.t.Helper()
	items, err := e.svc.Queue.WaitingOn(e.ctx, e.agents[name])
	if err != nil {
		e.t.Fatal(err)
	}
	n, err := e.svc.Queue.Count(e.ctx, e.agents[name])
	if err != nil || n != len(items) {
		e.t.Fatalf("count %d (%v), %d items", n, err, len(items))
	}
	out := map[string]models.QueueItem{}
	for _, it := range items {
		id := it.TaskID
		if it.Kind == models.QueueGoal {
			id = it.GoalID
		}
		out[it.Kind+":"+itoa(id)] = it
		if it.Since.IsZero() || it.Why == "" || it.Subject == "" || it.Primary == "" {
			e.t.Errorf("%s: incomplete item %+v", name, it)
		}
	}
	return out
}

// humanTask creates a task for a person with the given policies, in goal (nil: none).
func (e *inboxEnv) humanTask(title, assignee, approve, verify string, goal *int64) *models.Task {
	e.t.Helper()
	tk, err := e.svc.Tasks.CreateTask(e.ctx, e.agents["lead"], models.TaskSpec{Title: title, Brief: "Brief", Role: "developer",
		Assignee: assignee, Approve: approve, Verify: verify, GoalID: goal,
		Contract: contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone}}})
	if err != nil {
		e.t.Fatal(err)
	}
	return tk
}

// do has name take act on task id, failing the test on an error.
func (e *inboxEnv) do(name string, id int64, act models.Action, in models.ActionInput) {
	e.t.Helper()
	if _, err := e.svc.Tasks.TaskAction(e.ctx, e.agents[name], id, act, in); err != nil {
		e.t.Fatalf("%s %s task %d: %v", name, act, id, err)
	}
}

// wantSees fails unless key is in name's queue with primary action primary; it
// returns the item.
func (e *inboxEnv) wantSees(name, key, primary string) models.QueueItem {
	e.t.Helper()
	it, ok := e.queue(name)[key]
	if !ok {
		e.t.Fatalf("%s does not see %s", name, key)
	}
	if it.Primary != primary {
		e.t.Errorf("%s sees %s with primary %q, want %q", name, key, it.Primary, primary)
	}
	return it
}

func (e *inboxEnv) wantNotSees(name, key string) {
	e.t.Helper()
	if it, ok := e.queue(name)[key]; ok {
		e.t.Errorf("%s sees %s (%+v), and may not act on it", name, key, it)
	}
}

// TestQueueWhoSeesWhat: each kind of item reaches the people whose primary action the
// rules allow, and nobody else.
func TestQueueWhoSeesWhat(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			e := newQueueEnv(t, dialect)
			checkQueueInbox(t, e)
			checkQueueReviewVerify(t, e)
			checkQueueGoal(t, e)
		})
	}
}

// checkQueueInbox: blocked tasks (exec, lead), advisory outputs (exec, lead),
// questions (exec, lead, the creator), escalations (lead only).
func checkQueueInbox(t *testing.T, e *inboxEnv) {
	blk := e.blocked("write the report")
	key := "blocked:" + itoa(blk.TaskID)
	it := e.wantSees("exec", key, string(models.ActRetry))
	if !slices.Contains(it.Secondary, string(models.ActAccept)) || !slices.Contains(it.Secondary, string(models.ActCancel)) || !it.TextRequired {
		t.Errorf("exec's blocked item %+v", it)
	}
	if got := e.wantSees("lead", key, string(models.ActRetry)); slices.Contains(got.Secondary, string(models.ActAccept)) {
		t.Errorf("a lead is offered accept, an exec's action: %+v", got)
	}
	e.wantNotSees("dev", key)

	adv := e.advisory("investigate the slow API")
	e.wantSees("exec", "advisory:"+itoa(adv.TaskID), models.QueueOpen)
	e.wantNotSees("tess", "advisory:"+itoa(adv.TaskID))

	q, runner := e.workerTask("needs a decision")
	if _, err := e.svc.Tasks.TaskAction(e.ctx, runner, q.ID, models.ActAsk, models.ActionInput{Question: "Which port?"}); err != nil {
		t.Fatal(err)
	}
	it = e.wantSees("lead", "question:"+itoa(q.ID), string(models.ActAnswer))
	if it.Why != "The worker asks: Which port?" {
		t.Errorf("question item says %q", it.Why)
	}
	e.wantNotSees("dev", "question:"+itoa(q.ID))

	// Escalation: verifiers reject twice.
	esc := e.humanTask("flaky feature", "dev", "any", "tester", nil)
	e.do("dev", esc.ID, models.ActStart, models.ActionInput{})
	for range 2 {
		e.do("dev", esc.ID, models.ActSubmit, models.ActionInput{Summary: "done"})
		e.do("exec", esc.ID, models.ActApprove, models.ActionInput{})
		e.do("tess", esc.ID, models.ActRejectVerification, models.ActionInput{Reason: "still flaky"})
	}
	e.wantSees("lead", "escalation:"+itoa(esc.ID), models.QueueOpen)
	e.wantNotSees("exec", "escalation:"+itoa(esc.ID))
	e.wantSees("dev", "assigned:"+itoa(esc.ID), string(models.ActSubmit))
}

// checkQueueReviewVerify: a person's submission in review reaches those who may
// approve it, not its builder; completed work reaches the verifier role, not its
// builder (who holds that role too), not its approver, not a role without it.
func checkQueueReviewVerify(t *testing.T, e *inboxEnv) {
	tk := e.humanTask("dark mode", "dana", "any", "tester", nil)
	e.wantSees("dana", "assigned:"+itoa(tk.ID), string(models.ActStart))
	e.do("dana", tk.ID, models.ActStart, models.ActionInput{})
	e.do("dana", tk.ID, models.ActSubmit, models.ActionInput{Summary: "toggle added"})
	review := "review:" + itoa(tk.ID)
	if it := e.wantSees("lead", review, string(models.ActApprove)); !slices.Contains(it.Secondary, string(models.ActReject)) {
		t.Errorf("review item %+v", it)
	}
	e.wantSees("tess", review, string(models.ActApprove))
	e.wantNotSees("dana", review) // builder ≠ approver in a team of three or more

	e.do("tess", tk.ID, models.ActApprove, models.ActionInput{})
	verify := "verify:" + itoa(tk.ID)
	e.wantNotSees("dana", verify) // her own work, though she is a tester
	e.wantNotSees("tess", verify) // she approved it
	e.wantNotSees("lead", verify) // verifying needs the tester role
	e.wantNotSees("exec", verify)

	tk2 := e.humanTask("light mode", "dana", "any", "tester", nil)
	e.do("dana", tk2.ID, models.ActStart, models.ActionInput{})
	e.do("dana", tk2.ID, models.ActSubmit, models.ActionInput{Summary: "done"})
	e.do("lead", tk2.ID, models.ActApprove, models.ActionInput{})
	it := e.wantSees("tess", "verify:"+itoa(tk2.ID), string(models.ActVerify))
	if !slices.Equal(it.Roles, []string{"tester"}) || it.NeedsText != "notes" {
		t.Errorf("verify item %+v", it)
	}
	e.wantNotSees("dana", "verify:"+itoa(tk2.ID))

	w, err := e.svc.Queue.WaitingFor(e.ctx, e.task(tk2.ID))
	if err != nil {
		t.Fatal(err)
	}
	if w == nil || w.Action != models.ActVerify || !slices.Equal(w.Roles, []string{"tester"}) || !slices.Equal(w.Names, []string{"tess"}) {
		t.Errorf("waiting for %+v, want verify by the tester role (tess)", w)
	}
	e.do("tess", tk2.ID, models.ActVerify, models.ActionInput{Notes: "works"})
	e.wantNotSees("tess", "verify:"+itoa(tk2.ID))
	if w, _ := e.svc.Queue.WaitingFor(e.ctx, e.task(tk2.ID)); w != nil {
		t.Errorf("a verified task waits for %+v", w)
	}
}

// checkQueueGoal: a goal waiting for verification reaches the leads only.
func checkQueueGoal(t *testing.T, e *inboxEnv) {
	g := &models.Goal{Title: "ship dark mode"}
	if err := e.svc.Goals.CreateGoal(e.ctx, e.agents["lead"], g); err != nil {
		t.Fatal(err)
	}
	key := "goal_verify:" + itoa(g.ID)
	tk := e.humanTask("the toggle", "dev", "", "", &g.ID)
	e.do("dev", tk.ID, models.ActStart, models.ActionInput{})
	e.do("dev", tk.ID, models.ActSubmit, models.ActionInput{Summary: "done"})
	e.do("lead", tk.ID, models.ActApprove, models.ActionInput{})
	e.wantNotSees("lead", key)
	e.do("exec", tk.ID, models.ActVerify, models.ActionInput{Notes: "ok"})
	if it := e.wantSees("lead", key, models.QueueVerifyGoal); !it.TextRequired || !slices.Contains(it.Secondary, models.QueueRejectGoal) {
		t.Errorf("goal item %+v", it)
	}
	e.wantNotSees("exec", key)
	e.wantNotSees("dev", key)
	if _, err := e.svc.Goals.VerifyGoal(e.ctx, e.agents["lead"], g.ID, "tested"); err != nil {
		t.Fatal(err)
	}
	e.wantNotSees("lead", key)
}

func (e *inboxEnv) task(id int64) *models.Task {
	e.t.Helper()
	tk, err := e.db.GetTask(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return tk
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
