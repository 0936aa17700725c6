package pages_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// asRunner runs fn as the runner in a transaction on the locked task id.
func (e *env) asRunner(id int64, fn func(tx models.Tx, runner *models.Agent, t *models.Task) error) {
	e.t.Helper()
	runner, err := e.svc.Agents.RunnerAgent(e.ctx())
	if err != nil {
		e.t.Fatal(err)
	}
	err = e.svc.Store().InTx(e.ctx(), func(tx models.Tx) error {
		t, err := tx.LockTask(e.ctx(), id)
		if err != nil {
			return err
		}
		return fn(tx, runner, t)
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// TestInboxNotReadyCheckAgain: a task blocked as not ready shows what is missing
// instead of attempts and offers Check again, a retry without guidance, which sends
// it back to its worker and resolves the item; a developer is offered no button.
func TestInboxNotReadyCheckAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	e.team()
	tk, err := e.svc.Tasks.CreateTask(e.ctx(), models.System, models.TaskSpec{Title: "Needs a linter", Brief: "Lint it.",
		Role: "developer", Assignee: "bot", Contract: contract.Contract{Completion: contract.Completion{Verify: []string{"no-such-tool-xyz --check"}}}})
	if err != nil {
		t.Fatal(err)
	}
	e.act("runner", tk.ID, models.ActStart, models.ActionInput{})
	missing := `verify command "no-such-tool-xyz --check" needs no-such-tool-xyz, which is not on PATH (/usr/bin:/bin)`
	e.asRunner(tk.ID, func(tx models.Tx, runner *models.Agent, t *models.Task) error {
		return e.svc.Attempts.BlockNotReady(e.ctx(), tx, runner, t, []string{missing})
	})
	it := e.inboxItemOf(tk.ID)
	exec, dev := e.browser().login("exec"), e.browser().login("dev")
	c := card(exec.get("/inbox").Body, it.ID)
	for _, want := range []string{`data-testid="inbox-missing"`, "no-such-tool-xyz, which is not on PATH", `data-testid="inbox-form-check-again"`,
		`action="/tasks/` + itoa64(tk.ID) + `/action/retry"`, "Check again", `data-testid="inbox-form-retry"`} {
		if !strings.Contains(c, want) {
			t.Errorf("not-ready card lacks %s:\n%s", want, c)
		}
	}
	if strings.Contains(c, "Attempt 0") || strings.Contains(c, "inbox-check-again-reason") {
		t.Errorf("not-ready card lists an attempt or asks for guidance:\n%s", c)
	}
	if strings.Contains(card(dev.get("/inbox").Body, it.ID), "inbox-form-check-again") {
		t.Errorf("a developer is offered Check again")
	}
	if r := exec.post("/tasks/"+itoa64(tk.ID)+"/action/retry", url.Values{"back": {"/inbox"}}); r.Status != http.StatusSeeOther {
		t.Fatalf("check again: status %d: %.400s", r.Status, r.Body)
	}
	if s := e.state(tk.ID); s != models.TaskAssigned {
		t.Errorf("after check again: %s, want assigned", s)
	}
	if got := e.item(it.ID); !got.Resolved || got.Resolution != "checked again" {
		t.Errorf("item %+v", got)
	}
	// A task blocked by failed checks still needs guidance.
	bt := e.blockedTask("Failed its checks", nil)
	if r := exec.post("/tasks/"+itoa64(bt.ID)+"/action/retry", url.Values{"back": {"/inbox"}}); r.Status != http.StatusUnprocessableEntity {
		t.Errorf("retry without guidance after failed checks: status %d, want 422", r.Status)
	}
	if strings.Contains(card(exec.get("/inbox").Body, e.inboxItemOf(bt.ID).ID), "inbox-form-check-again") {
		t.Errorf("a task that failed its checks is offered Check again")
	}
}

// TestInboxPausedAgent: a paused agent's notice names the agent (linking to its page)
// and why, offers no task action (the task waits for the agent) but Dismiss, and is
// resolved when an admin enables the agent again.
func TestInboxPausedAgent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	e.team()
	tk, err := e.svc.Tasks.CreateTask(e.ctx(), models.System, models.TaskSpec{Title: "Waits for bot", Brief: "Do it.", Role: "developer", Assignee: "bot"})
	if err != nil {
		t.Fatal(err)
	}
	e.act("runner", tk.ID, models.ActStart, models.ActionInput{})
	bot := e.agents["bot"]
	e.asRunner(tk.ID, func(tx models.Tx, runner *models.Agent, t *models.Task) error {
		return e.svc.Agents.PauseAgent(e.ctx(), tx, runner, bot.ID, t, models.AgentPausedPayload{Attempt: 1, ExitCode: 127,
			Reason: "sh: 1: no-such-worker-binary: not found"})
	})
	it := e.inboxItemOf(tk.ID)
	exec := e.browser().login("exec")
	body := exec.get("/inbox").Body
	if !strings.Contains(body, `data-testid="inbox-group-agent_paused"`) {
		t.Errorf("no group of paused agents")
	}
	c := card(body, it.ID)
	for _, want := range []string{`href="/agents/` + itoa64(bot.ID) + `"`, "no-such-worker-binary: not found",
		`data-testid="inbox-form-dismiss"`, "Agent bot paused"} {
		if !strings.Contains(c, want) {
			t.Errorf("paused-agent card lacks %s:\n%s", want, c)
		}
	}
	for _, act := range []string{"retry", "reassign", "accept", "cancel", "check-again"} {
		if strings.Contains(c, `data-testid="inbox-form-`+act+`"`) {
			t.Errorf("paused-agent card offers %s", act)
		}
	}
	a, err := e.svc.Store().GetAgent(e.ctx(), bot.ID)
	if err != nil || !a.Disabled {
		t.Fatalf("agent %+v %v, want disabled", a, err)
	}
	a.Disabled = false
	if err := e.svc.Agents.UpdateAgent(e.ctx(), e.agents["admin"], a); err != nil {
		t.Fatal(err)
	}
	if got := e.item(it.ID); !got.Resolved || got.Resolution != "agent bot enabled again by admin" {
		t.Errorf("item after enabling %+v", got)
	}
}
