//go:build linux && (amd64 || arm64)

package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/internal/scriptedapi"
	"github.com/countersign/countersign/runner/sandbox"
)

// envQwenBin names the pinned Qwen Code CLI .ci/run installs.
const envQwenBin = "COUNTERSIGN_QWEN_BIN"

// qwenModel is the model the scripted Chat Completions API answers as.
const qwenModel = "qwen3-coder-plus"

// TestRealQwenWorker runs the real Qwen Code CLI (the qwen preset, the generic
// OpenAI-compatible one, the version .ci/run pins), confined, against a scripted Chat
// Completions API. "writes its output": the script has it write the output file with
// its write_file tool, the task is verified, the attempt's tokens are what the API
// reported (read from the stream-json the runner decodes), the API saw the key, no
// file the runner keeps holds it, and the preset turned Qwen Code's usage statistics
// off. "capped below one call": with the model priced and a cent to spend, the runner
// stops the run on the first call's usage, before the tool call that would finish it.
func TestRealQwenWorker(t *testing.T) {
	bin := realCLI(t, envQwenBin, "Qwen Code CLI")
	sb := readySandbox(t)
	command := presetCommand(t, "qwen", "qwen --auth-type", "qwen", bin)
	if !streamsJSON(command) {
		t.Fatalf("the runner does not decode the qwen preset's output: %q", command)
	}
	contract := func() contract.Contract {
		return contract.Contract{
			Completion:   contract.Completion{Type: contract.CompletionFile, Path: "out/report.md", MinLength: 100, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
			Verification: contract.Verification{Type: contract.VerifyVerifiable, Criteria: []contract.Criterion{{Activity: "unit-test", Description: "passes"}}},
		}
	}
	start := func(t *testing.T, h *harness, api *scriptedapi.Server) *models.Agent {
		names := passEnv(t, map[string]string{"OPENAI_BASE_URL": api.URL, "OPENAI_API_KEY": fakeOpenAIKey, "OPENAI_MODEL": qwenModel})
		a := h.worker("qwen", "developer", command, confinedAgent(names, api.Port, npmInstall(t, bin)))
		h.start()
		return a
	}

	t.Run("writes its output", func(t *testing.T) {
		h := newHarness(t, "sqlite", func(c *Config) { c.Sandbox, c.ConnectPorts = sb, []uint16{} })
		tk := h.task("Write the report", "developer", contract())
		out := filepath.Join(h.root, "work", "tasks", itoa(tk.ID), "out", "report.md")
		report := "# Report\n\nThe scripted model wrote this file with Qwen Code's write_file tool, " +
			"confined by Countersign's sandbox.\n\nTASK_COMPLETE\n"
		api := scriptedapi.NewChat(t, qwenModel,
			scriptedapi.Turn{Text: "I'll write the report.", Calls: []scriptedapi.Call{{Name: "write_file", Args: map[string]string{"file_path": out, "content": report}}},
				Usage: scriptedapi.Usage{Input: 1300, Cached: 300, Output: 70, Reasoning: 5}},
			scriptedapi.Turn{Text: "The report is written. TASK_COMPLETE",
				Usage: scriptedapi.Usage{Input: 1600, Cached: 1000, Output: 30}},
		)
		a := start(t, h, api)

		got := h.settled(tk.ID, 3*time.Minute)
		atts := h.attempts(tk.ID)
		if got.State != models.TaskVerified || len(atts) != 1 {
			t.Fatalf("the task is %s with attempts %+v; the API saw %s", got.State, atts, api.Report())
		}
		if b, err := os.ReadFile(out); err != nil || string(b) != report {
			t.Fatalf("the output file: %q, %v; want the scripted content", b, err)
		}
		if calls := api.LoopCalls(); len(calls) != 2 {
			t.Fatalf("the API saw %s; want two loop calls", api.Report())
		}
		if res := api.ToolResults(); len(res) != 1 || !strings.Contains(res[0], "Successfully created") {
			t.Errorf("the tool's result as Qwen Code sent it back: %q", res)
		}
		wantQwenTokens(t, atts[0].Usage, api.Sum())
		if keys := api.Keys(); len(keys) != 1 || keys[0] != fakeOpenAIKey {
			t.Errorf("the API saw the keys %q; want the agent's", keys)
		}
		if leaks := filesHolding(t, h.root, fakeOpenAIKey); len(leaks) > 0 {
			t.Errorf("the key was written to %q", leaks)
		}
		wantStatisticsOff(t, filepath.Join(h.root, "work", "agents", a.Name, "home", ".qwen", "settings.json"))
		if !strings.Contains(atts[0].OutputTail, "write_file") || !strings.Contains(atts[0].OutputTail, "TASK_COMPLETE") {
			t.Errorf("the attempt's tail is not the readable log:\n%s", atts[0].OutputTail)
		}
		t.Logf("the API saw %s; the attempt's usage %s; tail:\n%s", api.Report(), usageText(atts[0].Usage), atts[0].OutputTail)
	})

	t.Run("capped below one call", func(t *testing.T) {
		capped(t, sb, bin, contract(), start)
	})
}

// capped runs a task capped at a cent whose first scripted call reports two million
// priced input tokens, then asks for a slow command and the write that would finish
// it: the runner must stop the run at stage budget after that call.
func capped(t *testing.T, sb *sandbox.Sandbox, bin string, c contract.Contract, start func(*testing.T, *harness, *scriptedapi.Server) *models.Agent) {
	h := newHarness(t, "sqlite", func(c *Config) { c.Sandbox, c.ConnectPorts = sb, []uint16{} })
	rules, err := h.svc.Templates.Rules(h.ctx)
	must(t, err)
	rules.Prices = []models.ModelPrice{{Pattern: qwenModel, InputPerMTok: 3, OutputPerMTok: 15, CacheReadPerMTok: 0.3}}
	must(t, h.svc.Templates.SaveRules(h.ctx, h.boss, &rules))
	cent := 0.01
	c.Budget = &contract.Budget{MaxCostUSD: &cent}
	tk := h.task("Think expensively", "developer", c)
	out := filepath.Join(h.root, "work", "tasks", itoa(tk.ID), "out", "report.md")
	api := scriptedapi.NewChat(t, qwenModel,
		scriptedapi.Turn{Text: "Thinking hard.", Calls: []scriptedapi.Call{{Name: "run_shell_command", Args: map[string]string{"command": "sleep 30"}}},
			Usage: scriptedapi.Usage{Input: 2_000_000, Output: 50}},
		scriptedapi.Turn{Calls: []scriptedapi.Call{{Name: "write_file", Args: map[string]string{"file_path": out, "content": strings.Repeat("x", 200) + " TASK_COMPLETE"}}},
			Usage: scriptedapi.Usage{Input: 2_000_000, Output: 50}},
	)
	start(t, h, api)

	got := h.settled(tk.ID, 3*time.Minute)
	atts := h.attempts(tk.ID)
	if got.State != models.TaskBlocked || got.AttemptsUsed != 0 || len(atts) != 1 || atts[0].Stage != models.StageBudget {
		t.Fatalf("the capped task is %s with %d attempts charged, attempts %+v; want blocked at stage budget, uncharged; the API saw %s",
			got.State, got.AttemptsUsed, atts, api.Report())
	}
	if n := len(api.LoopCalls()); n > 1 {
		t.Fatalf("the API saw %s; want at most one loop call", api.Report())
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("the capped run wrote its output")
	}
	t.Logf("the API saw %s; the attempt %s: %s", api.Report(), atts[0].Stage, usageText(atts[0].Usage))
}

// wantQwenTokens fails t unless u holds the tokens as Qwen Code reports them: its
// input_tokens is the API's prompt_tokens, cached included (see QwenPreset), and the
// runner records them as given.
func wantQwenTokens(t *testing.T, u *models.Usage, sum scriptedapi.Usage) {
	t.Helper()
	if u == nil || u.InputTokens == nil || u.OutputTokens == nil || u.CacheReadTokens == nil {
		t.Fatalf("the attempt's usage: %s; want the API's %+v", usageText(u), sum)
	}
	if *u.InputTokens != sum.Input || *u.CacheReadTokens != sum.Cached || *u.OutputTokens != sum.Output {
		t.Errorf("the attempt's tokens: input %d cache read %d output %d; the API reported %+v",
			*u.InputTokens, *u.CacheReadTokens, *u.OutputTokens, sum)
	}
	if u.Model != qwenModel {
		t.Errorf("the attempt's model: %q; want %q", u.Model, qwenModel)
	}
}

// wantStatisticsOff fails t unless the settings file at path turns usage statistics
// off.
func wantStatisticsOff(t *testing.T, path string) {
	t.Helper()
	settings, err := os.ReadFile(path)
	var prefs struct {
		Privacy struct {
			UsageStatisticsEnabled *bool `json:"usageStatisticsEnabled"`
		} `json:"privacy"`
	}
	if err != nil || json.Unmarshal(settings, &prefs) != nil || prefs.Privacy.UsageStatisticsEnabled == nil || *prefs.Privacy.UsageStatisticsEnabled {
		t.Errorf("the agent's settings %s: %q, %v; want usage statistics off", path, settings, err)
	}
}
