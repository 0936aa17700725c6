package runner

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/evaluator"
)

// failureCase is one way a worker's attempt can fail, and what the runner must make
// of it.
type failureCase struct {
	name     string
	command  func(t *testing.T) string
	contract func(c *contract.Contract)
	eval     string // testdata evaluator script, if any
	stage    string
	diag     string // in the diagnosis of every attempt
}

func failureCases() []failureCase {
	noChange := func(*contract.Contract) {}
	return []failureCase{
		{name: "no output", command: cmd("noout.sh"), contract: noChange, stage: models.StageMechanical, diag: "output file missing at out/"},
		{name: "output too short", command: cmd("short.sh"), contract: noChange, stage: models.StageMechanical, diag: "is 4 bytes long; the contract requires at least 100 bytes"},
		{name: "wrong signal", command: cmd("signal.sh", "rejected"), contract: func(c *contract.Contract) {
			c.Completion = contract.Completion{Type: contract.CompletionSignal, Path: "review/{task_id}.json", Signal: "approved"}
		}, stage: models.StageMechanical, diag: `signal "rejected" but "approved" required`},
		{name: "contradiction", command: cmd("contradiction.sh"), contract: noChange, stage: models.StageContradiction, diag: `"requires manual"`},
		{name: "missing done token", command: cmd("notoken.sh"), contract: noChange, stage: models.StageDoneToken, diag: `done token "TASK_COMPLETE" not found`},
		{name: "failing verify command", command: cmd("ok.sh"), contract: func(c *contract.Contract) {
			c.Completion.Verify = []string{"test -f missing.txt"}
		}, stage: models.StageVerify, diag: `verify command "test -f missing.txt" exited with status 1`},
		{name: "failing criterion", command: cmd("ok.sh"), contract: func(c *contract.Contract) {
			c.Verification.Criteria = []contract.Criterion{{Activity: "unit-test", Description: "tests pass"}, {Activity: "failing", Description: "always fails"}}
		}, stage: models.StageVerify, diag: `criterion failing ("always fails"): command "exit 4" exited with status 4`},
		{name: "hung worker", command: cmd("hang.sh"), contract: func(c *contract.Contract) {
			c.Completion.Timeout = contract.Duration{Duration: time.Second}
		}, stage: models.StageProcess, diag: "worker timed out after 1s"},
		{name: "crash kill -9", command: cmd("crash.sh"), contract: noChange, stage: models.StageProcess, diag: "killed by SIGKILL"},
		{name: "crash exit 137", command: cmd("exit137.sh"), contract: noChange, stage: models.StageProcess, diag: "exited with status 137"},
		{name: "evaluator says fail", command: cmd("ok.sh"), contract: func(c *contract.Contract) {
			c.Completion.Evaluate = "Must handle every error."
		}, eval: "eval_fail.sh", stage: models.StageEvaluation, diag: "criterion 2 (error handling) is not addressed"},
	}
}

func cmd(name string, args ...string) func(t *testing.T) string {
	return func(t *testing.T) string { return script(t, name, args...) }
}

// TestFailureModes runs each failing worker through the pool: two attempts that fail
// at the right stage with the right diagnosis, the revision's brief quoting the first
// diagnosis, then blocked with the completion-verification.md payload, an inbox item
// and a task.blocked ledger entry, and nothing else on the ledger.
func TestFailureModes(t *testing.T) {
	for _, d := range dialects() {
		for _, fc := range failureCases() {
			t.Run(d+"/"+fc.name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, d, func(c *Config) {
					if fc.eval != "" {
						c.Evaluator = commandEvaluator(t, fc.eval)
					}
				})
				h.worker("dev", "developer", fc.command(t))
				c := fileContract()
				fc.contract(&c)
				task := h.task("failing "+fc.name, "developer", c)
				h.start()
				got := h.wait(task.ID, models.TaskBlocked, models.TaskVerified)
				if got.State != models.TaskBlocked {
					t.Fatalf("state %s, want blocked", got.State)
				}
				if got.AttemptsUsed != 2 {
					t.Errorf("attempts used %d, want 2", got.AttemptsUsed)
				}
				atts := h.attempts(task.ID)
				if len(atts) != 2 {
					t.Fatalf("%d attempts, want 2: %+v", len(atts), atts)
				}
				for i, a := range atts {
					if a.Number != i+1 || a.Outcome != models.OutcomeFailed || a.Stage != fc.stage || !strings.Contains(a.Diagnosis, fc.diag) {
						t.Errorf("attempt %d: number %d outcome %s stage %s diagnosis %q; want failed at %s with %q",
							i+1, a.Number, a.Outcome, a.Stage, a.Diagnosis, fc.stage, fc.diag)
					}
					if a.FinishedAt == nil || a.LogPath == "" || a.Brief == "" || len(a.Checks) == 0 {
						t.Errorf("attempt %d is missing evidence: %+v", i+1, a)
					}
					last := a.Checks[len(a.Checks)-1]
					if last.Stage != fc.stage || last.Verdict != models.VerdictFail {
						t.Errorf("attempt %d: last check %+v, want %s fail", i+1, last, fc.stage)
					}
				}
				// The revision's brief carries the first attempt's diagnosis.
				firstLine, _, _ := strings.Cut(atts[0].Diagnosis, "\n")
				if b := h.brief(task.ID, 2); !strings.Contains(b, firstLine) || !strings.Contains(b, "Revision: attempt 2") {
					t.Errorf("brief 2 lacks the diagnosis %q:\n%s", firstLine, b)
				}
				if b := h.brief(task.ID, 1); strings.Contains(b, "Revision") {
					t.Errorf("brief 1 is a revision brief:\n%s", b)
				}
				p := h.blockedPayload(task.ID)
				if p.Type != models.LedgerTaskBlocked || p.TaskID != task.ID || p.Agent != "dev" || p.CompletionSpec.Type != c.Completion.Type || len(p.Attempts) != 2 {
					t.Fatalf("payload %+v", p)
				}
				for i, a := range p.Attempts {
					if a.Attempt != i+1 || a.Stage != fc.stage || !strings.Contains(a.Failure, fc.diag) {
						t.Errorf("payload attempt %+v", a)
					}
				}
				diagnosesAreTidy(t, h, task.ID, fc.stage)
				if lt := h.ledgerTypes(task.ID); !slices.Equal(lt, []string{models.LedgerTaskBlocked}) {
					t.Errorf("ledger %v, want only task.blocked", lt)
				}
				evs := h.events(task.ID)
				for _, want := range []string{"task.started", "attempt.started", "attempt.finished", "task.blocked", "inbox.created"} {
					if !slices.Contains(evs, want) {
						t.Errorf("events %v lack %s", evs, want)
					}
				}
			})
		}
	}
}

// TestRevisionFixesOutput: a worker that reads the diagnosis from its revision brief
// and fixes its output ends verified after two attempts, with a task.complete entry.
func TestRevisionFixesOutput(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, d, nil)
			h.worker("dev", "developer", script(t, "fixes.sh"))
			task := h.task("fix it", "developer", fileContract())
			h.start()
			got := h.wait(task.ID, models.TaskVerified, models.TaskBlocked)
			if got.State != models.TaskVerified {
				t.Fatalf("state %s, want verified; attempts %+v", got.State, h.attempts(task.ID))
			}
			atts := h.attempts(task.ID)
			if len(atts) != 2 || atts[0].Outcome != models.OutcomeFailed || atts[1].Outcome != models.OutcomePassed {
				t.Fatalf("attempts %+v", atts)
			}
			if len(atts[1].OutputHash) != 96 {
				t.Errorf("output hash %q is not SHA-384 hex", atts[1].OutputHash)
			}
			if !strings.Contains(h.brief(task.ID, 2), "is 4 bytes long") {
				t.Errorf("revision brief lacks the diagnosis")
			}
			if lt := h.ledgerTypes(task.ID); !slices.Equal(lt, []string{models.LedgerTaskComplete}) {
				t.Errorf("ledger %v, want only task.complete", lt)
			}
			if got.VerifierID == nil || got.ApproverID == nil {
				t.Errorf("verified without the runner as approver and verifier: %+v", got)
			}
		})
	}
}

// TestEvaluatorDown: an evaluator that gives no verdict never passes a task and never
// charges the worker: the evaluation is tried again on the same output, the worker
// running once, and after MaxInfraFailures tries the task blocks with stage
// infrastructure.
func TestEvaluatorDown(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, d, func(c *Config) { c.Evaluator = commandEvaluator(t, "eval_down.sh") })
			h.worker("dev", "developer", script(t, "ok.sh"))
			c := fileContract()
			c.Completion.Evaluate = "Must be right."
			task := h.task("evaluate me", "developer", c)
			h.start()
			got := h.wait(task.ID, models.TaskBlocked, models.TaskVerified)
			if got.State != models.TaskBlocked || got.AttemptsUsed != 0 {
				t.Fatalf("state %s attempts used %d, want blocked with 0", got.State, got.AttemptsUsed)
			}
			atts := h.attempts(task.ID)
			if len(atts) != 1 {
				t.Fatalf("%d attempts, want 1 (the worker runs once)", len(atts))
			}
			a := atts[0]
			if a.Outcome != models.OutcomeInfra || a.Stage != models.StageInfra || !strings.Contains(a.Diagnosis, "evaluator gave no verdict") {
				t.Errorf("attempt %+v", a)
			}
			if n := countChecks(a, models.StageEvaluation, models.VerdictError); n != h.cfg.MaxInfraFailures {
				t.Errorf("%d failed evaluation tries, want %d: %+v", n, h.cfg.MaxInfraFailures, a.Checks)
			}
			p := h.blockedPayload(task.ID)
			if len(p.Attempts) != 1 || p.Attempts[0].Stage != models.StageInfra {
				t.Errorf("payload attempts %+v", p.Attempts)
			}
		})
	}
}

// TestEvaluatorNoneFailsClosed: without an evaluator, a contract with evaluate is not
// ready: it blocks before any worker runs, naming the missing evaluator.
func TestEvaluatorNoneFailsClosed(t *testing.T) {
	h := newHarness(t, "sqlite", func(c *Config) { c.Evaluator = evaluator.None{} })
	h.worker("dev", "developer", script(t, "ok.sh"))
	c := fileContract()
	c.Completion.Evaluate = "Must be right."
	task := h.task("evaluate me", "developer", c)
	h.start()
	if got := h.wait(task.ID, models.TaskBlocked, models.TaskVerified); got.State != models.TaskBlocked {
		t.Fatalf("state %s", got.State)
	}
	if p := h.blockedPayload(task.ID); len(p.Missing) != 1 || !strings.Contains(p.Missing[0], "no evaluator is configured") || len(h.attempts(task.ID)) != 0 {
		t.Fatalf("payload %+v, attempts %+v", p, h.attempts(task.ID))
	}
}

// TestBinaryOutputIsRecorded: a worker printing NUL bytes and invalid UTF-8 still has
// its attempts recorded (PostgreSQL text refuses NUL) and blocks normally.
func TestBinaryOutputIsRecorded(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, d, nil)
			h.worker("dev", "developer", `cat >/dev/null; printf 'a\000b\377c\n'; exit 1`)
			task := h.task("binary", "developer", noneContract())
			h.start()
			h.wait(task.ID, models.TaskBlocked)
			atts := h.attempts(task.ID)
			if len(atts) != 2 || strings.ContainsRune(atts[0].OutputTail, 0) || !strings.Contains(atts[0].OutputTail, "a\uFFFDb") {
				t.Fatalf("attempts %+v", atts)
			}
		})
	}
}
