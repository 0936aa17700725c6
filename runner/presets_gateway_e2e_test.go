//go:build linux && (amd64 || arm64)

package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/gateway"
	"github.com/countersign/countersign/runner/internal/scriptedapi"
)

// The providers' keys in these tests: only the gateway holds them.
const (
	openAISecret = "sk-countersign-provider-openai-secret-e2e"
	geminiSecret = "AIza-countersign-provider-gemini-secret-e2e"
)

// TestPresetsBehindTheGateway runs the real Codex, Qwen Code and Gemini CLIs (the
// codex, qwen and gemini presets) confined in a private network, reaching the
// scripted API (OpenAI's Responses, Chat, Google's Gemini) only through the model
// gateway: the task is verified, the attempt's usage is what the gateway metered and
// equals the script's sums, the CLI's own report agrees (no mismatch), the API saw
// only the provider's key, and that key is nowhere the runner keeps (the worker had
// only its attempt's credential, though its agent passes the key variable by name).
func TestPresetsBehindTheGateway(t *testing.T) {
	wf := func(out, report string) scriptedapi.Call {
		return scriptedapi.Call{Name: "write_file", Args: map[string]string{"file_path": out, "content": report}}
	}
	cases := []struct {
		name, env, what, at string
		model               string
		chat, gemini        bool
		call                func(out, report string) scriptedapi.Call
	}{
		{name: "codex", env: envCodexBin, what: "Codex CLI", at: "{ codex exec", model: codexModel,
			call: func(out, report string) scriptedapi.Call {
				write := "mkdir -p " + shq(filepath.Dir(out)) + " && cat > " + shq(out) + " <<'EOF'\n" + report + "EOF"
				return scriptedapi.Call{Name: "exec_command", Args: map[string]string{"cmd": write}}
			}},
		{name: "qwen", env: envQwenBin, what: "Qwen Code CLI", at: "qwen --auth-type", model: qwenModel, chat: true, call: wf},
		{name: "gemini", env: envGeminiBin, what: "Gemini CLI", at: "{ gemini --approval-mode", model: geminiModel, gemini: true, call: wf},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bin := realCLI(t, c.env, c.what)
			sb := readySandbox(t)
			if ok, why := sb.NetworkIsolation(); !ok {
				t.Fatalf("the private network must work on this machine: %s", why)
			}
			command := presetCommand(t, c.name, c.at, c.name, bin)
			var api *scriptedapi.Server
			newAPI, secret := scriptedapi.NewResponses, openAISecret
			switch {
			case c.chat:
				newAPI = scriptedapi.NewChat
			case c.gemini:
				newAPI, secret = scriptedapi.NewGemini, geminiSecret
			}
			// The output path is known once the task is: a placeholder turn is replaced below.
			h := newHarness(t, "sqlite", nil)
			tk := h.task("Write the report", "developer", contract.Contract{
				Completion:   contract.Completion{Type: contract.CompletionFile, Path: "out/report.md", MinLength: 100, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
				Verification: contract.Verification{Type: contract.VerifyVerifiable, Criteria: []contract.Criterion{{Activity: "unit-test", Description: "passes"}}},
			})
			out := filepath.Join(h.root, "work", "tasks", itoa(tk.ID), "out", "report.md")
			report := "# Report\n\nThe scripted model wrote this through Countersign's model gateway, " +
				"from a private network.\n\nTASK_COMPLETE\n"
			api = newAPI(t, c.model,
				scriptedapi.Turn{Text: "I'll write the report.", Calls: []scriptedapi.Call{c.call(out, report)},
					Usage: scriptedapi.Usage{Input: 1200, Cached: 200, Output: 60, Reasoning: 10}},
				scriptedapi.Turn{Text: "The report is written. TASK_COMPLETE", Usage: scriptedapi.Usage{Input: 1500, Cached: 900, Output: 25}})
			cfg := gateway.Config{OpenAI: gateway.Upstream{BaseURL: api.URL, Key: secret}, Prices: models.DefaultPrices()}
			env := map[string]string{"OPENAI_MODEL": c.model, "OPENAI_API_KEY": secret}
			if c.gemini {
				cfg.OpenAI, cfg.Gemini = gateway.Upstream{}, gateway.Upstream{BaseURL: api.URL, Key: secret}
				env = map[string]string{"GEMINI_MODEL": c.model, "GEMINI_API_KEY": secret, "GOOGLE_GEMINI_BASE_URL": api.URL}
			}
			gw, err := gateway.New(cfg)
			must(t, err)
			svc := gateway.NewService(gw, "127.0.0.1:0")
			must(t, svc.Start(context.Background()))
			t.Cleanup(func() { _ = svc.Stop(context.Background()) })
			h.cfg.Sandbox, h.cfg.ConnectPorts, h.cfg.Gateway, h.cfg.GatewayService, h.cfg.PrivateNetwork = sb, []uint16{}, gw, svc, true
			names := passEnv(t, env)
			h.worker(c.name, "developer", command, func(a *models.Agent) {
				a.PassEnv = names // the key among them: the gateway keeps it out
				a.Sandbox = models.AgentSandbox{Read: []string{npmInstall(t, bin)}}
			})
			h.start()
			got := h.settled(tk.ID, 3*time.Minute)
			atts := h.attempts(tk.ID)
			if len(atts) > 0 && atts[0].Network != nil {
				t.Logf("the attempt's network log: %+v", *atts[0].Network)
			}
			if got.State != models.TaskVerified || len(atts) != 1 {
				t.Fatalf("the task is %s with attempts %+v; the API saw %s", got.State, atts, api.Report())
			}
			checkMeteredThroughGateway(t, h, api, atts[0], out, report, secret)
		})
	}
}

// TestClaudeBehindTheGateway runs the real Claude Code CLI (the claude preset)
// confined in a private network, reaching the scripted Messages API only through the
// model gateway: it writes its output with its Write tool, the task is verified, the
// attempt's usage is what the gateway metered (the API's sums), the CLI's own report
// agrees, and the provider's key is nowhere the runner keeps.
func TestClaudeBehindTheGateway(t *testing.T) {
	bin := realClaude(t)
	sb := readySandbox(t)
	if ok, why := sb.NetworkIsolation(); !ok {
		t.Fatalf("the private network must work on this machine: %s", why)
	}
	command := shq(bin) + strings.TrimPrefix(Presets["claude"], "claude")
	h := newHarness(t, "sqlite", nil)
	tk := h.task("Write the report", "developer", contract.Contract{
		Completion:   contract.Completion{Type: contract.CompletionFile, Path: "out/report.md", MinLength: 100, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
		Verification: contract.Verification{Type: contract.VerifyVerifiable, Criteria: []contract.Criterion{{Activity: "unit-test", Description: "passes"}}},
	})
	out := filepath.Join(h.root, "work", "tasks", itoa(tk.ID), "out", "report.md")
	report := "# Report\n\nThe scripted model wrote this file with Claude Code's Write tool, through " +
		"Countersign's model gateway.\n\nTASK_COMPLETE\n"
	api := newFakeAnthropic(t, claudeModel,
		fakeTurn{Blocks: []fakeBlock{{Text: "I'll write the report."}, {Tool: "Write", Input: map[string]string{"file_path": out, "content": report}}},
			Usage: fakeUsage{Input: 1000, Output: 50, CacheRead: 200, CacheWrite: 300}},
		fakeTurn{Blocks: []fakeBlock{{Text: "The report is written. TASK_COMPLETE"}}, Usage: fakeUsage{Input: 1400, Output: 20, CacheRead: 500}},
	)
	names := claudeEnv(t, api)
	t.Setenv("ANTHROPIC_API_KEY", providerSecret) // passed by name: the gateway keeps it out
	gw, err := gateway.New(gateway.Config{Anthropic: gateway.Upstream{BaseURL: api.URL, Key: providerSecret}, Prices: models.DefaultPrices()})
	must(t, err)
	svc := gateway.NewService(gw, "127.0.0.1:0")
	must(t, svc.Start(context.Background()))
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	h.cfg.Sandbox, h.cfg.ConnectPorts, h.cfg.Gateway, h.cfg.GatewayService, h.cfg.PrivateNetwork = sb, []uint16{}, gw, svc, true
	install := []string{filepath.Dir(bin), filepath.Dir(mustEval(t, bin))}
	h.worker("claude", "developer", command, func(a *models.Agent) {
		a.PassEnv = names
		a.Sandbox = models.AgentSandbox{Read: install}
	})
	h.start()
	got := h.settled(tk.ID, 3*time.Minute)
	atts := h.attempts(tk.ID)
	if got.State != models.TaskVerified || len(atts) != 1 {
		t.Fatalf("the task is %s with attempts %+v; the API saw %s", got.State, atts, api.report())
	}
	u := atts[0].Usage
	want := sumUsage(api.loopCalls())
	if u == nil || u.Source != models.UsageMetered || *u.InputTokens != want.Input || *u.OutputTokens != want.Output ||
		*u.CacheReadTokens != want.CacheRead || *u.CacheWriteTokens != want.CacheWrite {
		t.Fatalf("the attempt's usage %s; the API billed %+v", usageText(u), want)
	}
	if u.Mismatch != "" {
		t.Errorf("the CLI's honest report was flagged: %s", u.Mismatch)
	}
	if leaks := filesHolding(t, h.root, providerSecret); len(leaks) > 0 {
		t.Errorf("the provider's key reached %q", leaks)
	}
	t.Logf("the API saw %s; the attempt's usage %s, reported %s", api.report(), usageText(u), usageText(u.Reported))
}

// checkMeteredThroughGateway checks a preset's verified run behind the gateway: the
// output written, the attempt's usage metered and matching what the API billed, the
// CLI's report not flagged, and the provider's key seen only by the API. Split out
// of TestPresetsBehindTheGateway to keep that test within the length limit.
func checkMeteredThroughGateway(t *testing.T, h *harness, api *scriptedapi.Server, att models.Attempt, out, report, secret string) {
	t.Helper()
	if b, err := os.ReadFile(out); err != nil || string(b) != report {
		t.Fatalf("the output file: %q, %v", b, err)
	}
	u := att.Usage
	if u == nil || u.Source != models.UsageMetered {
		t.Fatalf("the attempt's usage is not metered: %s", usageText(u))
	}
	sum := api.Sum()
	if *u.InputTokens != sum.Input-sum.Cached || *u.CacheReadTokens != sum.Cached || *u.OutputTokens != sum.Output {
		t.Errorf("metered input %d cache read %d output %d; the API billed %+v", *u.InputTokens, *u.CacheReadTokens, *u.OutputTokens, sum)
	}
	if u.Mismatch != "" {
		t.Errorf("the CLI's honest report was flagged: %s (reported %s)", u.Mismatch, usageText(u.Reported))
	}
	if keys := api.Keys(); len(keys) != 1 || keys[0] != secret {
		t.Errorf("the API saw the keys %q; want only the provider's", keys)
	}
	if leaks := filesHolding(t, h.root, secret); len(leaks) > 0 {
		t.Errorf("the provider's key reached %q", leaks)
	}
	t.Logf("the API saw %s; the attempt's usage %s, reported %s", api.Report(), usageText(u), usageText(u.Reported))
}
