package runner

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

func noneContract() contract.Contract {
	return contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone}, Verification: contract.Verification{Type: contract.VerifyVerifiable}}
}

// waitRunning waits until task id has an attempt running.
func (h *harness) waitRunning(id int64) {
	h.t.Helper()
	h.waitFor("a running attempt", func() bool {
		atts := h.attempts(id)
		return len(atts) > 0 && atts[len(atts)-1].Outcome == models.OutcomeRunning
	})
}

// TestStopDuringWorker: Stop gives the worker the grace period, then cancels it; the
// attempt is an infrastructure failure ("runner stopping"), the lease is released so
// another runner may take over at once, and a second Stop is harmless.
func TestStopDuringWorker(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, d, func(c *Config) { c.Grace = 300 * time.Millisecond })
			h.worker("dev", "developer", script(t, "hang.sh"))
			task := h.task("hangs", "developer", noneContract())
			p := h.start()
			h.waitRunning(task.ID)
			start := time.Now()
			must(t, p.Stop(h.ctx))
			if took := time.Since(start); took < 300*time.Millisecond || took > 5*time.Second {
				t.Errorf("stop took %v; want the grace period, then a prompt cancel", took)
			}
			must(t, p.Stop(h.ctx)) // idempotent
			got, err := h.db.GetTask(h.ctx, task.ID)
			must(t, err)
			if got.State != models.TaskInProgress || got.LeaseOwner != "" || got.LeaseUntil != nil || got.AttemptsUsed != 0 {
				t.Fatalf("after stop: state %s lease %q/%v used %d", got.State, got.LeaseOwner, got.LeaseUntil, got.AttemptsUsed)
			}
			atts := h.attempts(task.ID)
			if len(atts) != 1 || atts[0].Outcome != models.OutcomeInfra || !strings.HasPrefix(atts[0].Diagnosis, "runner stopping") {
				t.Fatalf("attempts %+v", atts)
			}

			// Another runner takes the task over at once, without using an attempt.
			ag, err := h.db.GetAgentByName(h.ctx, "dev")
			must(t, err)
			ag.Command = script(t, "ok.sh")
			must(t, h.svc.Agents.UpdateAgent(h.ctx, h.boss, ag))
			h.cfg.RunnerID = "second"
			h.start()
			got = h.wait(task.ID, models.TaskVerified)
			if got.AttemptsUsed != 0 || len(h.attempts(task.ID)) != 2 {
				t.Fatalf("takeover used %d attempts, %d attempt rows", got.AttemptsUsed, len(h.attempts(task.ID)))
			}
		})
	}
}

// TestStopWithoutStart and TestStartTwice cover the lifecycle edges.
func TestStopWithoutStart(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	p, err := New(h.cfg)
	must(t, err)
	must(t, p.Stop(h.ctx))
	must(t, p.Stop(h.ctx))
	p2 := h.start()
	if err := p2.Start(h.ctx); err == nil {
		t.Fatal("second Start succeeded")
	}
}

// TestWorkflowReleasesNextStep: a three-step run goes through in order; each
// verification releases the next step and the freed agent takes it at once.
func TestWorkflowReleasesNextStep(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, d, nil)
			h.worker("dev", "developer", script(t, "ok.sh"))
			h.worker("rev", "reviewer", script(t, "signal.sh", "approved"))
			tpl := &models.Template{Name: "flow", Steps: []models.Step{
				{Name: "build", Role: "developer", Brief: "build {{what}}", Completion: fileContract().Completion, Verification: contract.Verification{Type: contract.VerifyVerifiable}},
				{Name: "review", Role: "reviewer", Brief: "review it", Completion: contract.Completion{Type: contract.CompletionSignal, Signal: "approved"}, Verification: contract.Verification{Type: contract.VerifyVerifiable}},
				{Name: "ship", Role: "developer", Brief: "ship it", Completion: contract.Completion{Type: contract.CompletionNone}, Verification: contract.Verification{Type: contract.VerifyVerifiable}},
			}}
			must(t, h.svc.Templates.SaveTemplate(h.ctx, h.boss, tpl))
			g := &models.Goal{Title: "ship the thing"}
			must(t, h.svc.Goals.CreateGoal(h.ctx, h.boss, g))
			_, tasks, err := h.svc.Templates.StartRun(h.ctx, h.boss, g.ID, "flow", 0, map[string]string{"what": "it"})
			must(t, err)
			h.start()
			for _, tk := range tasks {
				h.wait(tk.ID, models.TaskVerified)
			}
			var prevEnd time.Time
			for _, tk := range tasks {
				atts := h.attempts(tk.ID)
				if len(atts) != 1 || atts[0].Outcome != models.OutcomePassed {
					t.Fatalf("task %d attempts %+v", tk.ID, atts)
				}
				if atts[0].StartedAt.Before(prevEnd) {
					t.Errorf("step %d started before the previous step finished", tk.StepNum)
				}
				prevEnd = *atts[0].FinishedAt
			}
			h.waitFor("goal pending_verify", func() bool {
				gs, err := h.svc.Goals.GoalStatus(h.ctx, g.ID)
				return err == nil && gs.Goal.State == models.GoalPendingVerify
			})
			if n, _ := h.obs.count(); n != 3 {
				t.Errorf("%d dispatch latencies, want 3", n)
			}
		})
	}
}

// TestConcurrencyRespected: an agent with concurrency 2 never runs more than two tasks
// at once, and does run two.
func TestConcurrencyRespected(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	h.worker("dev", "developer", "cat >/dev/null; sleep 0.3", func(a *models.Agent) { a.Concurrency = 2 })
	h.worker("off", "developer", script(t, "ok.sh"), func(a *models.Agent) { a.Disabled = true })
	var ids []int64
	for i := range 5 {
		ids = append(ids, h.task("t"+itoa(int64(i)), "developer", noneContract()).ID)
	}
	p := h.start()
	var peak atomic.Int64
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n := int64(p.exec.runningCount()); n > peak.Load() {
				peak.Store(n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	for _, id := range ids {
		h.wait(id, models.TaskVerified)
	}
	close(stop)
	if peak.Load() != 2 {
		t.Fatalf("peak concurrency %d, want 2", peak.Load())
	}
	// The disabled agent never built anything.
	off, _ := h.db.GetAgentByName(h.ctx, "off")
	for _, id := range ids {
		if tk, _ := h.db.GetTask(h.ctx, id); tk.BuilderID == nil || *tk.BuilderID == off.ID {
			t.Errorf("task %d built by %v", id, tk.BuilderID)
		}
	}
}

// TestAdvisoryGoesToInbox: an advisory task skips the automated checks beyond the
// process and its output lands in the inbox.
func TestAdvisoryGoesToInbox(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	h.worker("dev", "developer", script(t, "noout.sh"))
	c := fileContract()
	c.Verification = contract.Verification{Type: contract.VerifyAdvisory}
	task := h.task("investigate the slow API", "developer", c)
	h.start()
	h.wait(task.ID, models.TaskVerified)
	items, err := h.db.ListInbox(h.ctx, models.InboxFilter{TaskID: task.ID, Kind: models.InboxAdvisory})
	must(t, err)
	if len(items) != 1 {
		t.Fatalf("%d advisory items", len(items))
	}
	if a := h.attempts(task.ID); len(a) != 1 || len(a[0].Checks) != 1 || a[0].Checks[0].Stage != models.StageProcess {
		t.Fatalf("advisory checks %+v", a)
	}
	// On the ledger it is not a runner-verified completion: a reader can tell.
	entries, err := h.db.ListLedger(h.ctx, models.LedgerFilter{TaskID: task.ID})
	must(t, err)
	if len(entries) != 1 || entries[0].Kind != models.KindAdvisory ||
		!strings.Contains(string(entries[0].Message), `"verifier":"runner","kind":"advisory"`) {
		t.Fatalf("ledger of an advisory task: %+v", entries)
	}
}

// TestRejectionRerunsBuilder: a verifier's rejection sends the task back; the runner
// re-runs the builder with the reason in the brief, without a stale diagnosis.
func TestRejectionRerunsBuilder(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, d, nil)
			h.worker("dev", "developer", script(t, "ok.sh"))
			task := h.task("needs a lead", "developer", fileContract(), func(s *models.TaskSpec) { s.Verify = models.RoleLead })
			h.start()
			h.wait(task.ID, models.TaskCompleted)
			_, err := h.svc.Tasks.TaskAction(h.ctx, h.boss, task.ID, models.ActRejectVerification, models.ActionInput{Reason: "add the rollback plan"})
			must(t, err)
			h.waitFor("second attempt", func() bool {
				a := h.attempts(task.ID)
				return len(a) == 2 && a[1].Outcome == models.OutcomePassed
			})
			got := h.wait(task.ID, models.TaskCompleted)
			b := h.brief(task.ID, 2)
			if !strings.Contains(b, "add the rollback plan") || strings.Contains(b, "Revision:") {
				t.Fatalf("brief 2:\n%s", b)
			}
			_, err = h.svc.Tasks.TaskAction(h.ctx, h.boss, got.ID, models.ActVerify, models.ActionInput{Notes: "fine"})
			must(t, err)
		})
	}
}

// TestTakeoverOfExpiredLease: a task whose runner died (lease expired, attempt left
// running) is taken over without using an attempt; the dead attempt is recorded as an
// infrastructure failure.
func TestTakeoverOfExpiredLease(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, d, nil)
			dev := h.worker("dev", "developer", script(t, "ok.sh"))
			task := h.task("orphan", "developer", fileContract(), func(s *models.TaskSpec) { s.Assignee = "dev" })
			past := time.Now().Add(-time.Second)
			must(t, h.db.InTx(h.ctx, func(tx models.Tx) error {
				tk, err := tx.LockTask(h.ctx, task.ID)
				if err != nil {
					return err
				}
				tk.State, tk.BuilderID, tk.LeaseOwner, tk.LeaseUntil = models.TaskInProgress, &dev.ID, "dead-runner", &past
				if err := tx.UpdateTask(h.ctx, tk); err != nil {
					return err
				}
				return tx.CreateAttempt(h.ctx, &models.Attempt{TaskID: tk.ID, Number: 1, AgentID: dev.ID, RunnerID: "dead-runner", Outcome: models.OutcomeRunning})
			}))
			h.start()
			got := h.wait(task.ID, models.TaskVerified)
			atts := h.attempts(task.ID)
			if got.AttemptsUsed != 0 || len(atts) != 2 || atts[0].Outcome != models.OutcomeInfra || atts[1].Outcome != models.OutcomePassed ||
				!strings.Contains(atts[0].Diagnosis, `"dead-runner" stopped renewing its lease`) {
				t.Fatalf("used %d, attempts %+v", got.AttemptsUsed, atts)
			}
			if evs := h.events(task.ID); !slices.Contains(evs, "task.taken_over") {
				t.Errorf("events %v lack task.taken_over", evs)
			}
		})
	}
}

// TestLeaseLostCancelsWorker: a person cancels a running task; the heartbeat notices
// the lease is gone and stops the worker; the attempt is infrastructure.
func TestLeaseLostCancelsWorker(t *testing.T) {
	h := newHarness(t, "sqlite", func(c *Config) { c.Lease = 300 * time.Millisecond })
	h.worker("dev", "developer", script(t, "hang.sh"))
	task := h.task("cancel me", "developer", noneContract())
	h.start()
	h.waitRunning(task.ID)
	_, err := h.svc.Tasks.TaskAction(h.ctx, h.boss, task.ID, models.ActCancel, models.ActionInput{Reason: "not needed"})
	must(t, err)
	h.waitFor("the attempt to end", func() bool {
		a := h.attempts(task.ID)
		return a[0].Outcome == models.OutcomeInfra
	})
	a := h.attempts(task.ID)[0]
	if !strings.Contains(a.Diagnosis, "lease lost") {
		t.Fatalf("diagnosis %q", a.Diagnosis)
	}
	if got, _ := h.db.GetTask(h.ctx, task.ID); got.State != models.TaskCancelled {
		t.Fatalf("state %s", got.State)
	}
}

// TestReviewFixAttempt: a reviewer's REVIEW_FAIL with rounds left adds a fix task;
// once it is verified the next attempt (not charged) is the review alone, its record
// carrying the feedback; REVIEW_PASS then verifies the task.
func TestReviewFixAttempt(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	h.worker("dev", "developer", script(t, "ok.sh"))
	h.worker("rev", "reviewer", script(t, "review_once.sh"))
	c := fileContract()
	c.Review = &contract.Review{Role: "reviewer", When: []string{contract.ReviewAlways}}
	task := h.task("reviewed", "developer", c)
	h.start()
	got := h.wait(task.ID, models.TaskVerified, models.TaskBlocked)
	atts := h.attempts(task.ID)
	if got.State != models.TaskVerified || got.AttemptsUsed != 0 || len(atts) != 2 || atts[0].Stage != models.StageReview {
		t.Fatalf("state %s used %d attempts %+v", got.State, got.AttemptsUsed, atts)
	}
	if b := h.brief(task.ID, 2); !strings.Contains(b, "The summary misses the rollback plan.") {
		t.Fatalf("fix brief lacks the feedback:\n%s", b)
	}
}

// TestReviewRoundsExhausted: a reviewer that never passes blocks the task with stage
// review after max_rounds rounds.
func TestReviewRoundsExhausted(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	h.worker("dev", "developer", script(t, "ok.sh"))
	h.worker("rev", "reviewer", script(t, "review_never.sh"))
	c := fileContract()
	c.Review = &contract.Review{Role: "reviewer", When: []string{contract.ReviewFinal}, MaxRounds: 2}
	task := h.task("never good", "developer", c)
	h.start()
	h.wait(task.ID, models.TaskBlocked)
	p := h.blockedPayload(task.ID)
	if len(p.Attempts) != 2 || p.Attempts[1].Stage != models.StageReview || !strings.Contains(p.Attempts[1].Failure, "no review rounds left") {
		t.Fatalf("payload %+v", p.Attempts)
	}
}

// TestReviewerMissingIsInfrastructure: without a reviewer agent the review cannot run.
func TestReviewerMissingIsInfrastructure(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	h.worker("dev", "developer", script(t, "ok.sh"))
	c := fileContract()
	c.Review = &contract.Review{Role: "reviewer"}
	task := h.task("nobody reviews", "developer", c)
	h.start()
	got := h.wait(task.ID, models.TaskBlocked)
	if got.AttemptsUsed != 0 || h.blockedPayload(task.ID).Attempts[0].Stage != models.StageInfra {
		t.Fatalf("used %d payload %+v", got.AttemptsUsed, h.blockedPayload(task.ID))
	}
}

// TestWorkdirGoneIsNotReady: a worker agent whose workdir is gone leaves the task
// nowhere to run: it is blocked as not ready before any attempt, naming the workdir.
func TestWorkdirGoneIsNotReady(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	h.worker("dev", "developer", script(t, "ok.sh"), func(a *models.Agent) { a.Workdir = "/nonexistent/countersign" })
	task := h.task("no place", "developer", fileContract())
	h.start()
	got := h.wait(task.ID, models.TaskBlocked)
	p := h.blockedPayload(task.ID)
	if got.AttemptsUsed != 0 || len(h.attempts(task.ID)) != 0 || len(p.Missing) != 1 || !strings.Contains(p.Missing[0], "workdir") {
		t.Fatalf("used %d attempts %+v, payload %+v", got.AttemptsUsed, h.attempts(task.ID), p)
	}
}

// TestRalphModeCooldown: with more than two attempts, each revision waits the
// cooldown.
func TestRalphModeCooldown(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	h.worker("dev", "developer", script(t, "short.sh"))
	c := fileContract()
	c.Completion.MaxAttempts = 3
	c.Completion.Cooldown = contract.Duration{Duration: 300 * time.Millisecond}
	task := h.task("ralph", "developer", c)
	h.start()
	h.wait(task.ID, models.TaskBlocked)
	atts := h.attempts(task.ID)
	if len(atts) != 3 {
		t.Fatalf("%d attempts", len(atts))
	}
	for i := 1; i < 3; i++ {
		if gap := atts[i].StartedAt.Sub(*atts[i-1].FinishedAt); gap < 300*time.Millisecond {
			t.Errorf("attempt %d started %v after the previous one", i+1, gap)
		}
	}
}

// TestSkipTaskRunsMinimalChecks: a skip task with an evaluate clause is not
// evaluated (evaluator.None would block it) and passes on the minimal checks.
func TestSkipTaskRunsMinimalChecks(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	h.worker("dev", "developer", script(t, "ok.sh"))
	c := fileContract()
	c.Verification = contract.Verification{Type: contract.VerifySkip}
	c.Completion.Evaluate = "Must read well."
	task := h.task("update README wording", "developer", c)
	h.start()
	h.wait(task.ID, models.TaskVerified)
}

// TestOnLogStreams: the live log hook sees the worker's output.
func TestOnLogStreams(t *testing.T) {
	var got atomic.Value
	got.Store("")
	h := newHarness(t, "sqlite", func(c *Config) {
		c.OnLog = func(id int64, chunk []byte) { got.Store(got.Load().(string) + string(chunk)) }
	})
	h.worker("dev", "developer", script(t, "ok.sh"))
	task := h.task("log", "developer", fileContract())
	h.start()
	h.wait(task.ID, models.TaskVerified)
	if s := got.Load().(string); !strings.Contains(s, "TASK_COMPLETE") {
		t.Fatalf("streamed %q", s)
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), "Service") {
		t.Fatalf("err %v", err)
	}
	h := newHarness(t, "sqlite", nil)
	p, err := New(h.cfg)
	must(t, err)
	if p.cfg.ClaimBatch != DefaultClaimBatch || p.cfg.Evaluator == nil {
		t.Fatalf("defaults not applied: %+v", p.cfg)
	}
	if Presets["claude"] == "" {
		t.Fatal("no claude preset")
	}
	_ = context.Background
}
