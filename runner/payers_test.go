package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/evaluator"
)

// flakyMessagesAPI speaks enough of the Anthropic Messages API for the evaluator: 503
// for the first `down` requests (all of them when down < 0), then a passing verdict.
type flakyMessagesAPI struct {
	srv   *httptest.Server
	down  int
	calls atomic.Int32
}

func newFlakyAPI(t *testing.T, down int) *flakyMessagesAPI {
	f := &flakyMessagesAPI{down: down}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(f.calls.Add(1))
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if f.down < 0 || n <= f.down {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"down for maintenance"}}`)
			return
		}
		text, _ := json.Marshal(`{"pass": true, "diagnosis": "meets every criterion"}`)
		fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":%s}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`, text)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *flakyMessagesAPI) evaluator(t *testing.T) evaluator.Evaluator {
	t.Helper()
	// No retries inside the SDK: each try the runner makes is one request.
	ev, err := evaluator.NewAnthropic(evaluator.AnthropicConfig{APIKey: "sk-test", BaseURL: f.srv.URL, MaxRetries: -1, Timeout: 5 * time.Second})
	must(t, err)
	return ev
}

// countChecks counts an attempt's checks at stage with verdict.
func countChecks(a models.Attempt, stage, verdict string) int {
	n := 0
	for _, c := range a.Checks {
		if c.Stage == stage && c.Verdict == verdict {
			n++
		}
	}
	return n
}

func gitIn(t testing.TB, dir string, args ...string) {
	t.Helper()
	if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// TestEvaluatorOutageRetriesTheEvaluationOnly: the evaluator answers 503 after the
// worker finished. The evaluation alone is tried again, with backoff, against the same
// output: the worker runs exactly once. When the evaluator comes back the task passes;
// when it stays down past MaxInfraFailures tries, the task blocks with stage
// infrastructure, the worker still having run once and no attempt charged.
func TestEvaluatorOutageRetriesTheEvaluationOnly(t *testing.T) {
	for _, d := range dialects() {
		for _, tc := range []struct {
			name  string
			down  int
			state models.TaskState
		}{{"comes back", 2, models.TaskVerified}, {"stays down", -1, models.TaskBlocked}} {
			t.Run(d+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				api := newFlakyAPI(t, tc.down)
				h := newHarness(t, d, func(c *Config) { c.Evaluator = api.evaluator(t) })
				runs := filepath.Join(t.TempDir(), "runs")
				h.worker("dev", "developer", "echo ran >> "+shq(runs)+"; "+script(t, "ok.sh"))
				c := fileContract()
				c.Completion.Evaluate = "Must explain what was done."
				task := h.task("evaluate through an outage", "developer", c)
				h.start()
				got := h.wait(task.ID, models.TaskVerified, models.TaskBlocked)
				if got.State != tc.state || got.AttemptsUsed != 0 {
					t.Fatalf("state %s attempts used %d, want %s with 0; attempts %+v", got.State, got.AttemptsUsed, tc.state, h.attempts(task.ID))
				}
				if n := lineCount(t, runs); n != 1 {
					t.Fatalf("the worker ran %d times, want exactly 1", n)
				}
				atts := h.attempts(task.ID)
				if len(atts) != 1 {
					t.Fatalf("%d attempts, want 1: %+v", len(atts), atts)
				}
				a := atts[0]
				errs := countChecks(a, models.StageEvaluation, models.VerdictError)
				switch tc.state {
				case models.TaskVerified:
					if api.calls.Load() != 3 || errs != 2 || countChecks(a, models.StageEvaluation, models.VerdictPass) != 1 || a.Outcome != models.OutcomePassed {
						t.Fatalf("%d calls, %d failed tries; attempt %+v", api.calls.Load(), errs, a)
					}
					if !strings.Contains(a.Checks[len(a.Checks)-3].Diagnosis, "503") {
						t.Errorf("the failed try does not say why: %+v", a.Checks)
					}
				default:
					if int(api.calls.Load()) != h.cfg.MaxInfraFailures || errs != h.cfg.MaxInfraFailures || a.Outcome != models.OutcomeInfra {
						t.Fatalf("%d calls, %d failed tries; attempt %+v", api.calls.Load(), errs, a)
					}
					if p := h.blockedPayload(task.ID); len(p.Attempts) != 1 || p.Attempts[0].Stage != models.StageInfra || !strings.Contains(p.Attempts[0].Failure, "503") {
						t.Errorf("payload %+v", p.Attempts)
					}
				}
			})
		}
	}
}

// TestLayerRetriesAloneWithBackoff: a layer that gives no verdict runs again after a
// growing wait, and its verdict decides once it gives one; one that never does marks
// the attempt for an immediate block after MaxInfraFailures tries.
func TestLayerRetriesAloneWithBackoff(t *testing.T) {
	h := newHarness(t, "sqlite", func(c *Config) {
		c.InfraBackoff, c.MaxInfraBackoff, c.MaxInfraFailures = 20*time.Millisecond, 30*time.Millisecond, 4
	})
	p, err := New(h.cfg)
	must(t, err)
	errUntil := func(n int) (func() models.CheckResult, *int) {
		calls := 0
		return func() models.CheckResult {
			calls++
			if calls <= n {
				return models.CheckResult{Stage: models.StageVerify, Verdict: models.VerdictError, Diagnosis: "could not start"}
			}
			return models.CheckResult{Stage: models.StageVerify, Verdict: models.VerdictPass}
		}, &calls
	}
	run, calls := errUntil(3)
	ar := &attemptRun{}
	start := time.Now()
	if !p.run.checker.layer(context.Background(), ar, run) || *calls != 4 || len(ar.checks) != 4 || ar.outcome != "" {
		t.Fatalf("layer: %d calls, checks %+v, outcome %q", *calls, ar.checks, ar.outcome)
	}
	if took := time.Since(start); took < 20*time.Millisecond+30*time.Millisecond+30*time.Millisecond {
		t.Errorf("three waits took %v: no backoff", took)
	}
	run, calls = errUntil(100)
	ar = &attemptRun{}
	if p.run.checker.layer(context.Background(), ar, run) || *calls != 4 || !ar.layerExhausted || ar.outcome != models.OutcomeInfra {
		t.Fatalf("layer: %d calls, exhausted %v, outcome %q", *calls, ar.layerExhausted, ar.outcome)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(ErrStopping)
	run, calls = errUntil(100)
	ar = &attemptRun{}
	if p.run.checker.layer(ctx, ar, run) || *calls != 1 || ar.layerExhausted || ar.cause != ErrStopping {
		t.Fatalf("cancelled layer: %d calls, exhausted %v, cause %v", *calls, ar.layerExhausted, ar.cause)
	}
}

// TestAgentCommandThatCannotRun: a worker command that is not found (127) or not
// executable (126) is the agent's failure, not the work's: no attempt is charged, the
// agent is paused (disabled) with an agent_paused inbox item saying why, and the task
// waits for it, in progress and unleased. Once an admin has repaired and enabled the
// agent, the task runs and is verified, and the item is resolved.
func TestAgentCommandThatCannotRun(t *testing.T) {
	for _, d := range dialects() {
		for _, tc := range []struct {
			name string
			code int
			// broken returns the broken command; fix repairs it and returns the command
			// to run after (the same one when the file was repaired).
			broken func(t *testing.T) (cmd string, fix func() string)
		}{
			{"not found", 127, func(t *testing.T) (string, func() string) {
				return "no-such-worker-binary --go", func() string { return script(t, "ok.sh") }
			}},
			{"not executable", 126, func(t *testing.T) (string, func() string) {
				bin := filepath.Join(t.TempDir(), "worker.sh")
				body, err := os.ReadFile(filepath.Join("testdata", "ok.sh"))
				must(t, err)
				must(t, os.WriteFile(bin, body, 0o644))
				return shq(bin), func() string { must(t, os.Chmod(bin, 0o755)); return shq(bin) }
			}},
		} {
			t.Run(d+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, d, nil)
				broken, fix := tc.broken(t)
				agent := h.worker("dev", "developer", broken)
				task := h.task("needs a working agent", "developer", fileContract())
				h.start()
				h.waitFor("the agent to be paused", func() bool {
					a, err := h.db.GetAgent(h.ctx, agent.ID)
					must(t, err)
					tk, err := h.db.GetTask(h.ctx, task.ID)
					must(t, err)
					return a.Disabled && tk.LeaseOwner == ""
				})
				got, err := h.db.GetTask(h.ctx, task.ID)
				must(t, err)
				if got.State != models.TaskInProgress || got.AttemptsUsed != 0 {
					t.Fatalf("task %s attempts used %d, want in_progress with 0", got.State, got.AttemptsUsed)
				}
				atts := h.attempts(task.ID)
				if len(atts) != 1 || atts[0].Outcome != models.OutcomeInfra || atts[0].ExitCode != tc.code ||
					!strings.Contains(atts[0].Diagnosis, fmt.Sprintf("the command of agent dev could not run (exit status %d", tc.code)) {
					t.Fatalf("attempts %+v", atts)
				}
				items, err := h.db.ListInbox(h.ctx, models.InboxFilter{Kind: models.InboxAgentPaused})
				must(t, err)
				if len(items) != 1 || items[0].TaskID != task.ID || !strings.Contains(items[0].Title, fmt.Sprintf("Agent dev paused: its command could not run (exit %d)", tc.code)) {
					t.Fatalf("agent_paused items %+v", items)
				}
				var p models.AgentPausedPayload
				must(t, json.Unmarshal(items[0].Payload, &p))
				if p.AgentID != agent.ID || p.ExitCode != tc.code || !strings.Contains(p.Reason, "could not run") {
					t.Errorf("payload %+v", p)
				}
				// It stays paused: nothing runs while the agent is disabled.
				time.Sleep(3 * h.cfg.Poll)
				if n := len(h.attempts(task.ID)); n != 1 {
					t.Fatalf("%d attempts while the agent is paused", n)
				}

				// An admin repairs the command and enables the agent again.
				a, err := h.db.GetAgent(h.ctx, agent.ID)
				must(t, err)
				a.Command, a.Disabled = fix(), false
				must(t, h.svc.Agents.UpdateAgent(h.ctx, h.boss, a))
				got = h.wait(task.ID, models.TaskVerified, models.TaskBlocked)
				if got.State != models.TaskVerified || got.AttemptsUsed != 0 {
					t.Fatalf("state %s attempts used %d; attempts %+v", got.State, got.AttemptsUsed, h.attempts(task.ID))
				}
				items, err = h.db.ListInbox(h.ctx, models.InboxFilter{Kind: models.InboxAgentPaused, IncludeResolved: true})
				must(t, err)
				if len(items) != 1 || !items[0].Resolved || !strings.Contains(items[0].Resolution, "enabled again by boss") {
					t.Errorf("agent_paused items %+v", items)
				}
			})
		}
	}
}

// TestOutputSymlinkOutIsTheWorkersFailure: a worker that makes its output path a
// symbolic link to /etc/passwd fails the mechanical check with a diagnosis naming the
// path and the link, on each of its two attempts (the runner removes the link before
// the revision and tells it so); nothing of it is an infrastructure failure. No
// diagnosis or brief holds an unexpanded {task_id}.
func TestOutputSymlinkOutIsTheWorkersFailure(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, d, nil)
			h.worker("dev", "developer", `cat >/dev/null; ln -sf /etc/passwd "$COUNTERSIGN_OUTPUT_PATH"; echo TASK_COMPLETE`)
			task := h.task("link out", "developer", fileContract())
			h.start()
			got := h.wait(task.ID, models.TaskBlocked, models.TaskVerified)
			if got.State != models.TaskBlocked || got.AttemptsUsed != 2 {
				t.Fatalf("state %s attempts used %d; attempts %+v", got.State, got.AttemptsUsed, h.attempts(task.ID))
			}
			path := "out/" + itoa(task.ID) + ".md"
			atts := h.attempts(task.ID)
			if len(atts) != 2 {
				t.Fatalf("%d attempts, want 2: %+v", len(atts), atts)
			}
			for _, a := range atts {
				want := "the output path " + path + " leads outside the workspace: " + path + " is a symbolic link to /etc/passwd"
				if a.Outcome != models.OutcomeFailed || a.Stage != models.StageMechanical || !strings.Contains(a.Diagnosis, want) {
					t.Errorf("attempt %d: %s at %s: %q; want failed at mechanical with %q", a.Number, a.Outcome, a.Stage, a.Diagnosis, want)
				}
				if strings.Contains(a.Diagnosis, contract.TaskIDPlaceholder) || strings.Contains(a.Brief, contract.TaskIDPlaceholder) {
					t.Errorf("attempt %d names an unexpanded path", a.Number)
				}
			}
			if b := h.brief(task.ID, 2); !strings.Contains(b, "The runner removed "+path+" (a link to /etc/passwd)") {
				t.Errorf("brief 2 does not say the link was removed:\n%s", b)
			}
			for _, a := range h.blockedPayload(task.ID).Attempts {
				if a.Stage != models.StageMechanical {
					t.Errorf("payload attempt %+v", a)
				}
			}
		})
	}
}

// TestChecklistPathExpanded: a checklist at {task_id}/todo.md is looked for at the
// expanded path, which its diagnosis names.
func TestChecklistPathExpanded(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	h.worker("dev", "developer", `cat >/dev/null; mkdir -p "$COUNTERSIGN_TASK_ID"; printf -- '- [x] one\n- [ ] two\n' > "$COUNTERSIGN_TASK_ID/todo.md"; echo TASK_COMPLETE`)
	c := contract.Contract{
		Completion:   contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE", Checklist: &contract.Checklist{Path: "{task_id}/todo.md", Count: 2}},
		Verification: contract.Verification{Type: contract.VerifyVerifiable},
	}
	task := h.task("tick the boxes", "developer", c)
	h.start()
	h.wait(task.ID, models.TaskBlocked)
	want := "checklist " + itoa(task.ID) + "/todo.md has 1 checked box(es)"
	for _, a := range h.attempts(task.ID) {
		if a.Stage != models.StageWorkspace || !strings.Contains(a.Diagnosis, want) {
			t.Errorf("attempt %d: %s %q, want workspace with %q", a.Number, a.Stage, a.Diagnosis, want)
		}
	}
}
