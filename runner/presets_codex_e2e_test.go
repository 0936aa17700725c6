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

// envCodexBin names the pinned Codex CLI .ci/run installs.
const envCodexBin = "COUNTERSIGN_CODEX_BIN"

// codexModel is the model the scripted API answers as. Codex has no metadata for it,
// so it offers the plain function tools (exec_command) the script calls.
const codexModel = "gpt-5-codex"

// fakeOpenAIKey is the key the worker is given: it must reach the API and nowhere
// the runner keeps.
const fakeOpenAIKey = "sk-countersign-e2e-0123456789abcdef-not-a-real-key"

// TestRealCodexWorker runs the real Codex CLI (the codex preset, the version .ci/run
// pins), confined, against a scripted Responses API: the script has it write the
// output file with a shell command (exec_command), the task is verified, the
// attempt's tokens are the sums the API reported, the API saw the key, and no file
// the runner keeps holds it. "its default model": with no OPENAI_MODEL, Codex asks
// for a model it knows and offers its tools in code mode (one free-form tool, exec,
// whose JavaScript calls exec_command), which works confined as well. The preset
// hands Codex the key by environment (its
// provider's env_key): "logged in" shows that the other way, codex login, leaves the
// key in the agent's home, where the check finds it.
func TestRealCodexWorker(t *testing.T) {
	bin := realCLI(t, envCodexBin, "Codex CLI")
	sb := readySandbox(t)
	command := presetCommand(t, "codex", "{ codex exec", "codex", bin)

	t.Run("writes its output", func(t *testing.T) {
		h, api, atts := runCodexTask(t, sb, bin, command, codexModel)
		if len(atts) != 1 || atts[0].Outcome != models.OutcomePassed {
			t.Fatalf("attempts %+v; the API saw %s", atts, api.Report())
		}
		if res := api.ToolResults(); len(res) != 1 || !strings.Contains(res[0], "exited with code 0") {
			t.Errorf("the command's result as Codex sent it back: %q", res)
		}
		wantTokens(t, atts[0].Usage, api.Sum(), codexModel)
		if keys := api.Keys(); len(keys) != 1 || keys[0] != fakeOpenAIKey {
			t.Errorf("the API saw the keys %q; want the agent's", keys)
		}
		if leaks := filesHolding(t, h.root, fakeOpenAIKey); len(leaks) > 0 {
			t.Errorf("the key was written to %q", leaks)
		}
		if !strings.Contains(atts[0].OutputTail, `"type":"command_execution"`) || !strings.Contains(atts[0].OutputTail, "TASK_COMPLETE") {
			t.Errorf("the attempt's tail is not Codex's event log:\n%s", atts[0].OutputTail)
		}
		t.Logf("the API saw %s; the attempt's usage %s", api.Report(), usageText(atts[0].Usage))
	})

	t.Run("its default model", func(t *testing.T) {
		_, api, atts := runCodexTask(t, sb, bin, command, "")
		if res := api.ToolResults(); len(res) != 1 {
			t.Errorf("the exec cell's result as Codex sent it back: %q", res)
		}
		wantTokens(t, atts[0].Usage, api.Sum(), "")
		t.Logf("the API saw %s; the attempt's usage %s", api.Report(), usageText(atts[0].Usage))
	})

	t.Run("logged in", func(t *testing.T) {
		login := "printenv OPENAI_API_KEY | " + shq(bin) + " login --with-api-key >/dev/null 2>&1; " + command
		h, api, _ := runCodexTask(t, sb, bin, login, codexModel)
		if leaks := filesHolding(t, h.root, fakeOpenAIKey); len(leaks) == 0 {
			t.Errorf("codex login left the key nowhere the check looks; the API saw %s", api.Report())
		} else {
			t.Logf("codex login wrote the key to %q", leaks)
		}
	})
}

// runCodexTask runs a task whose output file the scripted model has Codex write, with
// command as the worker, to verified; it returns the harness, the API and the
// attempts.
func runCodexTask(t *testing.T, sb *sandbox.Sandbox, bin, command, model string) (*harness, *scriptedapi.Server, []models.Attempt) {
	t.Helper()
	h := newHarness(t, "sqlite", func(c *Config) { c.Sandbox, c.ConnectPorts = sb, []uint16{} })
	tk := h.task("Write the report", "developer", contract.Contract{
		Completion:   contract.Completion{Type: contract.CompletionFile, Path: "out/report.md", MinLength: 100, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
		Verification: contract.Verification{Type: contract.VerifyVerifiable, Criteria: []contract.Criterion{{Activity: "unit-test", Description: "passes"}}},
	})
	out := filepath.Join(h.root, "work", "tasks", itoa(tk.ID), "out", "report.md")
	report := "# Report\n\nThe scripted model wrote this file with a shell command Codex ran, " +
		"confined by Countersign's sandbox.\n\nTASK_COMPLETE\n"
	write := "mkdir -p " + shq(filepath.Dir(out)) + " && cat > " + shq(out) + " <<'EOF'\n" + report + "EOF"
	call := scriptedapi.Call{Name: "exec_command", Args: map[string]string{"cmd": write}}
	env := map[string]string{"OPENAI_BASE_URL": "", "OPENAI_API_KEY": fakeOpenAIKey}
	if model != "" {
		env["OPENAI_MODEL"] = model
	} else {
		// Codex's default model, which it knows: it offers its tools in code mode, one
		// free-form tool, exec, running JavaScript that calls the others.
		js, err := json.Marshal(write)
		must(t, err)
		call = scriptedapi.Call{Name: "exec", Custom: true, Args: "await tools.exec_command({cmd: " + string(js) + "});"}
	}
	api := scriptedapi.NewResponses(t, model,
		scriptedapi.Turn{Text: "I'll write the report.", Calls: []scriptedapi.Call{call},
			Usage: scriptedapi.Usage{Input: 1200, Cached: 200, Output: 60, Reasoning: 10}},
		scriptedapi.Turn{Text: "The report is written. TASK_COMPLETE",
			Usage: scriptedapi.Usage{Input: 1500, Cached: 900, Output: 25}},
	)
	env["OPENAI_BASE_URL"] = api.URL
	names := passEnv(t, env)
	h.worker("codex", "developer", command, confinedAgent(names, api.Port, npmInstall(t, bin)))
	h.start()

	got := h.settled(tk.ID, 3*time.Minute)
	if got.State != models.TaskVerified {
		t.Fatalf("the task is %s with attempts %+v; the API saw %s", got.State, h.attempts(tk.ID), api.Report())
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != report {
		t.Fatalf("the output file: %q, %v; want the scripted content", b, err)
	}
	if calls := api.LoopCalls(); len(calls) != 2 {
		t.Fatalf("the API saw %s; want two loop calls", api.Report())
	}
	return h, api, h.attempts(tk.ID)
}

// wantTokens fails t unless u holds the tokens an OpenAI-counted sum reports: input
// uncached, cache reads, output (reasoning included), and the model.
func wantTokens(t *testing.T, u *models.Usage, sum scriptedapi.Usage, model string) {
	t.Helper()
	if u == nil || u.InputTokens == nil || u.OutputTokens == nil || u.CacheReadTokens == nil {
		t.Fatalf("the attempt's usage: %s; want the API's %+v", usageText(u), sum)
	}
	if *u.InputTokens != sum.Input-sum.Cached || *u.CacheReadTokens != sum.Cached || *u.OutputTokens != sum.Output {
		t.Errorf("the attempt's tokens: input %d cache read %d output %d; the API reported %+v (input counting the cached)",
			*u.InputTokens, *u.CacheReadTokens, *u.OutputTokens, sum)
	}
	if u.CacheWriteTokens != nil && *u.CacheWriteTokens != 0 {
		t.Errorf("the attempt's cache writes: %d; the API reported none", *u.CacheWriteTokens)
	}
	if u.Model != model {
		t.Errorf("the attempt's model: %q; want %q", u.Model, model)
	}
}
