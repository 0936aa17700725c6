//go:build linux && (amd64 || arm64)

package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/internal/scriptedapi"
)

// envGeminiBin names the pinned Gemini CLI .ci/run installs.
const envGeminiBin = "COUNTERSIGN_GEMINI_BIN"

// geminiModel is the model the scripted Gemini API answers as.
const geminiModel = "gemini-2.5-pro"

// fakeGeminiKey is the key the worker is given: it must reach the API and nowhere
// the runner keeps.
const fakeGeminiKey = "AIza-countersign-e2e-0123456789-not-a-real-key"

// TestRealGeminiWorker runs the real Gemini CLI (the gemini preset, the version
// .ci/run pins), confined, against a scripted Gemini API: the script has it write the
// output file with its write_file tool, the task is verified, the attempt's tokens
// are the sums the API reported (thoughts counted as output), the API saw the key,
// and no file the runner keeps holds it.
func TestRealGeminiWorker(t *testing.T) {
	bin := realCLI(t, envGeminiBin, "Gemini CLI")
	sb := readySandbox(t)
	command := presetCommand(t, "gemini", "{ gemini --approval-mode", "gemini", bin)
	if streamsJSON(command) {
		t.Fatalf("the runner would decode the gemini preset's output as Claude Code's: %q", command)
	}

	h := newHarness(t, "sqlite", func(c *Config) { c.Sandbox, c.ConnectPorts = sb, []uint16{} })
	tk := h.task("Write the report", "developer", contract.Contract{
		Completion:   contract.Completion{Type: contract.CompletionFile, Path: "out/report.md", MinLength: 100, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
		Verification: contract.Verification{Type: contract.VerifyVerifiable, Criteria: []contract.Criterion{{Activity: "unit-test", Description: "passes"}}},
	})
	out := filepath.Join(h.root, "work", "tasks", itoa(tk.ID), "out", "report.md")
	report := "# Report\n\nThe scripted model wrote this file with Gemini CLI's write_file tool, " +
		"confined by Countersign's sandbox.\n\nTASK_COMPLETE\n"
	api := scriptedapi.NewGemini(t, geminiModel,
		scriptedapi.Turn{Text: "I'll write the report.", Calls: []scriptedapi.Call{{Name: "write_file", Args: map[string]string{"file_path": out, "content": report}}},
			Usage: scriptedapi.Usage{Input: 1100, Cached: 100, Output: 80, Reasoning: 30}},
		scriptedapi.Turn{Text: "The report is written. TASK_COMPLETE",
			Usage: scriptedapi.Usage{Input: 1700, Cached: 800, Output: 40, Reasoning: 15}},
	)
	names := passEnv(t, map[string]string{"GOOGLE_GEMINI_BASE_URL": api.URL, "GEMINI_API_KEY": fakeGeminiKey, "GEMINI_MODEL": geminiModel})
	h.worker("gemini", "developer", command, confinedAgent(names, api.Port, npmInstall(t, bin)))
	h.start()

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
		t.Errorf("the tool's result as Gemini CLI sent it back: %q", res)
	}
	wantTokens(t, atts[0].Usage, api.Sum(), geminiModel)
	if keys := api.Keys(); len(keys) != 1 || keys[0] != fakeGeminiKey {
		t.Errorf("the API saw the keys %q; want the agent's", keys)
	}
	if leaks := filesHolding(t, h.root, fakeGeminiKey); len(leaks) > 0 {
		t.Errorf("the key was written to %q", leaks)
	}
	if !strings.Contains(atts[0].OutputTail, `"tool_name":"write_file"`) || !strings.Contains(atts[0].OutputTail, "TASK_COMPLETE") {
		t.Errorf("the attempt's tail is not the CLI's event log:\n%s", atts[0].OutputTail)
	}
	t.Logf("the API saw %s; the attempt's usage %s", api.Report(), usageText(atts[0].Usage))
}
