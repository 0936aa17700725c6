//go:build linux && (amd64 || arm64)

package runner

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/sandbox"
)

// envClaudeBin names the pinned Claude Code CLI .ci/run installs.
const envClaudeBin = "COUNTERSIGN_CLAUDE_BIN"

// claudeModel is the model the fake API answers as; the runner prices it.
const claudeModel = "claude-sonnet-4-5"

// realClaude returns the absolute path of the pinned Claude Code CLI: it skips the
// test when none is named outside CI, and fails in CI, where .ci/run installs it.
func realClaude(t *testing.T) string {
	t.Helper()
	bin := os.Getenv(envClaudeBin)
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s must name the Claude Code CLI in CI (.ci/run installs it)", envClaudeBin)
		}
		t.Skipf("%s is not set: no Claude Code CLI to run", envClaudeBin)
	}
	abs, err := filepath.Abs(bin)
	must(t, err)
	if fi, err := os.Stat(abs); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s=%s is not an executable file: %v", envClaudeBin, bin, err)
	}
	return abs
}

// claudeEnv is what the CLI needs to talk to the fake API alone: its address, a key
// (any), the model, and nothing of telemetry, error reports or updates.
func claudeEnv(t *testing.T, api *fakeAnthropic) []string {
	vars := map[string]string{
		"ANTHROPIC_BASE_URL":                       api.URL,
		"ANTHROPIC_API_KEY":                        "sk-ant-fake-countersign-e2e",
		"ANTHROPIC_MODEL":                          claudeModel,
		"ANTHROPIC_DEFAULT_HAIKU_MODEL":            claudeModel,
		"DISABLE_TELEMETRY":                        "1",
		"DISABLE_ERROR_REPORTING":                  "1",
		"DISABLE_AUTOUPDATER":                      "1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		// IS_SANDBOX is not here: the runner sets it beside bypassPermissions, without
		// which the CLI refuses to run as root.
	}
	var names []string
	for k, v := range vars {
		t.Setenv(k, v)
		names = append(names, k)
	}
	return names
}

// TestRealClaudeCodeWorker runs the real Claude Code CLI (the claude preset, the
// version .ci/run pins), confined, against a scripted Messages API: it writes the
// output file with its Write tool and the task is verified, the attempt's usage being
// the tokens the API reported; with a cap below one call's cost the task is blocked at
// stage budget after at most one call.
func TestRealClaudeCodeWorker(t *testing.T) {
	bin := realClaude(t)
	sb := sandbox.Probe(sandbox.ModeOn)
	if !sb.Ready() {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the sandbox must work in CI: %s", sb.Status())
		}
		t.Skipf("the sandbox does not work here: %s", sb.Status())
	}
	preset := Presets["claude"]
	if !strings.HasPrefix(preset, "claude ") {
		t.Fatalf("the claude preset does not start with claude: %q", preset)
	}
	command := shq(bin) + strings.TrimPrefix(preset, "claude")
	// The CLI is a native binary in an npm install: where it is named and where it
	// lies are what it reads.
	install := []string{filepath.Dir(bin), filepath.Dir(mustEval(t, bin))}

	contract := func() contract.Contract {
		return contract.Contract{
			Completion:   contract.Completion{Type: contract.CompletionFile, Path: "out/report.md", MinLength: 100, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
			Verification: contract.Verification{Type: contract.VerifyVerifiable, Criteria: []contract.Criterion{{Activity: "unit-test", Description: "passes"}}},
		}
	}
	// No port but the fake API's (not even 80 and 443): the run needs no network.
	confined := func(c *Config) { c.Sandbox, c.ConnectPorts = sb, []uint16{} }
	agent := func(api *fakeAnthropic, names []string) func(*models.Agent) {
		return func(a *models.Agent) {
			a.PassEnv = names
			a.Sandbox = models.AgentSandbox{Connect: []int{api.Port}, Read: install}
		}
	}

	t.Run("writes its output", func(t *testing.T) {
		h := newHarness(t, "sqlite", confined)
		tk := h.task("Write the report", "developer", contract())
		out := filepath.Join(h.root, "work", "tasks", itoa(tk.ID), "out", "report.md")
		report := "# Report\n\nThe scripted model wrote this file with Claude Code's Write tool, " +
			"confined by Countersign's sandbox.\n\nTASK_COMPLETE\n"
		api := newFakeAnthropic(t, claudeModel,
			fakeTurn{Blocks: []fakeBlock{{Text: "I'll write the report."}, {Tool: "Write", Input: map[string]string{"file_path": out, "content": report}}},
				Usage: fakeUsage{Input: 1000, Output: 50, CacheRead: 200, CacheWrite: 300}},
			fakeTurn{Blocks: []fakeBlock{{Text: "The report is written. TASK_COMPLETE"}},
				Usage: fakeUsage{Input: 1400, Output: 20, CacheRead: 500, CacheWrite: 0}},
		)
		h.worker("claude", "developer", command, agent(api, claudeEnv(t, api)))
		h.start()

		got := h.settled(tk.ID, 3*time.Minute)
		atts := h.attempts(tk.ID)
		if got.State != models.TaskVerified || len(atts) != 1 {
			t.Fatalf("the task is %s with attempts %+v; the API saw %s", got.State, atts, api.report())
		}
		b, err := os.ReadFile(out)
		if err != nil || string(b) != report {
			t.Fatalf("the output file: %q, %v; want the scripted content", b, err)
		}
		u := checkClaudeUsage(t, api, atts[0])
		if !strings.Contains(atts[0].OutputTail, "Write") || !strings.Contains(atts[0].OutputTail, "TASK_COMPLETE") {
			t.Errorf("the attempt's tail is not the readable log:\n%s", atts[0].OutputTail)
		}
		t.Logf("the API saw %s; the attempt's usage %s", api.report(), usageText(u))
	})

	t.Run("capped below one call", func(t *testing.T) {
		claudeCappedBelowOneCall(t, command, contract(), confined, agent)
	})
}

// mustEval resolves p's symbolic links.
func mustEval(t *testing.T, p string) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(p)
	must(t, err)
	return real
}

// usageText shows a usage's numbers rather than its pointers.
func usageText(u *models.Usage) string {
	if u == nil {
		return "none"
	}
	b, err := json.Marshal(u)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// checkClaudeUsage checks that the attempt recorded the tokens the fake API reported
// over its two loop calls and the CLI's reported cost, which must match the runner's
// own price of those tokens; it returns the usage for the test's log. Split out of
// TestRealClaudeCodeWorker to keep that test within the length limit.
func checkClaudeUsage(t *testing.T, api *fakeAnthropic, att models.Attempt) *models.Usage {
	t.Helper()
	calls := api.loopCalls()
	if len(calls) != 2 {
		t.Fatalf("the API saw %s; want two loop calls", api.report())
	}
	want := sumUsage(calls)
	u := att.Usage
	if u == nil || u.InputTokens == nil || u.OutputTokens == nil || u.CacheReadTokens == nil || u.CacheWriteTokens == nil {
		t.Fatalf("the attempt's usage: %+v; the API saw %s", u, api.report())
	}
	if *u.InputTokens != want.Input || *u.OutputTokens != want.Output || *u.CacheReadTokens != want.CacheRead || *u.CacheWriteTokens != want.CacheWrite {
		t.Errorf("the attempt's tokens: input %d output %d cache read %d cache write %d; the API reported %+v",
			*u.InputTokens, *u.OutputTokens, *u.CacheReadTokens, *u.CacheWriteTokens, want)
	}
	if u.CostUSD == nil || *u.CostUSD <= 0 || u.CostSource != models.CostReported {
		t.Fatalf("the attempt's cost: %s, want the CLI's reported total_cost_usd", usageText(u))
	}
	// The CLI prices the tokens itself; at Sonnet 4.5's list price, as the runner does.
	priced := models.Usage{Model: claudeModel, InputTokens: &want.Input, OutputTokens: &want.Output, CacheReadTokens: &want.CacheRead, CacheWriteTokens: &want.CacheWrite}
	priced.PriceWith(models.DefaultPrices())
	if priced.CostUSD == nil || math.Abs(*priced.CostUSD-*u.CostUSD) > 1e-9 {
		t.Errorf("the CLI's cost $%v differs from the runner's price of the same tokens %s", *u.CostUSD, usageText(&priced))
	}
	if u.Model != claudeModel || u.Turns == nil || *u.Turns < 1 {
		t.Errorf("the attempt's model and turns: %+v", u)
	}
	return u
}

// claudeCappedBelowOneCall is TestRealClaudeCodeWorker's subtest "capped below one
// call", a named function to keep that test within the length limit: a task whose
// budget is a cent is stopped at stage budget, uncharged, before it writes anything.
func claudeCappedBelowOneCall(t *testing.T, command string, c contract.Contract, confined func(*Config), agent func(*fakeAnthropic, []string) func(*models.Agent)) {
	h := newHarness(t, "sqlite", confined)
	cent := 0.01
	c.Budget = &contract.Budget{MaxCostUSD: &cent}
	tk := h.task("Think expensively", "developer", c)
	out := filepath.Join(h.root, "work", "tasks", itoa(tk.ID), "out", "report.md")
	// Two million input tokens of Sonnet 4.5 are $6, far past the cent: the runner
	// stops the run on the first assistant line that reports them (the CLI's own
	// --max-budget-usd ends it too, but only the runner's stop is stage budget),
	// before the scripted sleep or the Write that would finish the task.
	api := newFakeAnthropic(t, claudeModel,
		fakeTurn{Blocks: []fakeBlock{{Text: "Thinking hard."}, {Tool: "Bash", Input: map[string]string{"command": "sleep 30", "description": "wait"}}},
			Usage: fakeUsage{Input: 2_000_000, Output: 50}},
		fakeTurn{Blocks: []fakeBlock{{Tool: "Write", Input: map[string]string{"file_path": out, "content": strings.Repeat("x", 200) + " TASK_COMPLETE"}}},
			Usage: fakeUsage{Input: 2_000_000, Output: 50}},
		fakeTurn{Blocks: []fakeBlock{{Text: "TASK_COMPLETE"}}, Usage: fakeUsage{Input: 2_000_000, Output: 50}},
	)
	h.worker("claude", "developer", command, agent(api, claudeEnv(t, api)))
	h.start()

	got := h.settled(tk.ID, 3*time.Minute)
	atts := h.attempts(tk.ID)
	if got.State != models.TaskBlocked || got.AttemptsUsed != 0 || len(atts) != 1 || atts[0].Stage != models.StageBudget {
		t.Fatalf("the capped task is %s with %d attempts charged, attempts %+v; want blocked at stage budget, uncharged; the API saw %s",
			got.State, got.AttemptsUsed, atts, api.report())
	}
	if n := len(api.loopCalls()); n > 1 {
		t.Fatalf("the API saw %s; want at most one loop call", api.report())
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("the capped run wrote its output")
	}
	t.Logf("the API saw %s; the attempt %s: %s; tail:\n%s", api.report(), atts[0].Stage, usageText(atts[0].Usage), atts[0].OutputTail)
}
