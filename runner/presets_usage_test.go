package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// presetCommand is the named preset with its program replaced by bin, the pinned
// install; it fails when the preset does not run program as the words at says.
func presetCommand(t *testing.T, name, at, program, bin string) string {
	t.Helper()
	preset := Presets[name]
	if strings.Count(preset, at) != 1 || !strings.Contains(at, program) {
		t.Fatalf("the %s preset does not run %q once: %q", name, at, preset)
	}
	return strings.Replace(preset, at, strings.Replace(at, program, shq(bin), 1), 1)
}

// runPresetWith runs the named preset's shell with its program (the words at) replaced
// by a script printing lines and exiting with code, as /bin/sh runs every worker; it
// returns what the command printed, its exit code and the usage file it left (nil:
// none).
func runPresetWith(t *testing.T, name, at, program string, lines []string, code int) (string, int, []byte) {
	t.Helper()
	dir := t.TempDir()
	fake := filepath.Join(dir, program)
	var body strings.Builder
	body.WriteString("#!/bin/sh\ncat >/dev/null\n")
	for _, l := range lines {
		body.WriteString("printf '%s\\n' " + shq(l) + "\n")
	}
	body.WriteString("exit " + itoa(int64(code)) + "\n")
	must(t, os.WriteFile(fake, []byte(body.String()), 0o755))
	command := presetCommand(t, name, at, program, fake)
	usage := filepath.Join(dir, "tmp", usageFileName)
	must(t, os.MkdirAll(filepath.Dir(usage), 0o755))
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(dir, "home"), EnvUsageFile + "=" + usage, "OPENAI_MODEL=gpt-test"}
	cmd.Stdin = strings.NewReader("the brief")
	out, err := cmd.Output()
	rc := 0
	if ee, ok := err.(*exec.ExitError); ok {
		rc = ee.ExitCode()
	} else {
		must(t, err)
	}
	b, err := os.ReadFile(usage)
	if os.IsNotExist(err) {
		return string(out), rc, nil
	}
	must(t, err)
	return string(out), rc, b
}

// TestCodexPresetUsage runs the codex preset's shell around a stand-in for Codex: its
// JSON lines reach stdout unchanged, the usage file holds the turn.completed lines'
// sum in the runner's shape (input without the cached tokens), a message quoting a
// turn.completed line is not counted, and Codex's exit status is the command's.
func TestCodexPresetUsage(t *testing.T) {
	lines := []string{
		`{"type":"thread.started","thread_id":"t1"}`,
		`{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":999999}}"}}`,
		`{"type":"turn.completed","usage":{"input_tokens":2400,"cached_input_tokens":700,"cache_write_input_tokens":0,"output_tokens":70,"reasoning_output_tokens":10}}`,
		`{"type":"turn.completed","usage":{"output_tokens":5,"input_tokens":100,"cached_input_tokens":0}}`,
	}
	out, rc, usage := runPresetWith(t, "codex", "{ codex exec", "codex", lines, 0)
	if out != strings.Join(lines, "\n")+"\n" || rc != 0 {
		t.Fatalf("the command printed %q and exited %d; want the lines unchanged and 0", out, rc)
	}
	u, err := parseUsage(usage)
	if err != nil || u.InputTokens == nil || u.CacheReadTokens == nil || u.OutputTokens == nil {
		t.Fatalf("the usage file %q: %+v, %v", usage, u, err)
	}
	if *u.InputTokens != 1800 || *u.CacheReadTokens != 700 || *u.OutputTokens != 75 || u.Model != "gpt-test" {
		t.Errorf("the usage file %s; want input 2500-700, cache read 700, output 75, model gpt-test", usage)
	}

	t.Run("failing", func(t *testing.T) {
		_, rc, usage := runPresetWith(t, "codex", "{ codex exec", "codex", lines[:1], 3)
		if rc != 3 || usage != nil {
			t.Errorf("Codex exited 3 with no turn: the command exited %d, usage file %q", rc, usage)
		}
	})
}

// TestGeminiPresetUsage runs the gemini preset's shell around a stand-in for the
// Gemini CLI: its lines reach stdout unchanged, the usage file holds the result's
// run stats (not the per-model ones after them), output counting the thoughts, the
// init line's model, and the CLI's exit status is the command's.
func TestGeminiPresetUsage(t *testing.T) {
	lines := []string{
		`{"type":"init","timestamp":"x","session_id":"s","model":"gemini-test"}`,
		`{"type":"message","role":"assistant","content":"{\"type\":\"result\",\"stats\":{\"input\":999999}}","delta":true}`,
		`{"type":"result","status":"success","stats":{"total_tokens":2520,"input_tokens":2400,"output_tokens":100,"cached":700,"input":1700,"duration_ms":9,"tool_calls":1,"models":{"gemini-test":{"total_tokens":1,"input_tokens":1,"output_tokens":1,"cached":1,"input":1}}}}`,
	}
	out, rc, usage := runPresetWith(t, "gemini", "{ gemini --approval-mode", "gemini", lines, 0)
	if out != strings.Join(lines, "\n")+"\n" || rc != 0 {
		t.Fatalf("the command printed %q and exited %d; want the lines unchanged and 0", out, rc)
	}
	u, err := parseUsage(usage)
	if err != nil || u.InputTokens == nil || u.CacheReadTokens == nil || u.OutputTokens == nil {
		t.Fatalf("the usage file %q: %+v, %v", usage, u, err)
	}
	if *u.InputTokens != 1700 || *u.CacheReadTokens != 700 || *u.OutputTokens != 120 || u.Model != "gemini-test" {
		t.Errorf("the usage file %s; want input 1700, cache read 700, output 2520-2400, model gemini-test", usage)
	}

	t.Run("failing", func(t *testing.T) {
		_, rc, usage := runPresetWith(t, "gemini", "{ gemini --approval-mode", "gemini", lines[:1], 41)
		if rc != 41 || usage != nil {
			t.Errorf("the CLI exited 41 with no result: the command exited %d, usage file %q", rc, usage)
		}
	})
}

// TestPresetsKeepClaudeDecoding checks which presets the runner decodes as Claude
// Code's stream-json: claude and qwen print it; codex and gemini print streams of
// their own, which the decoder would misread (a Gemini result line taken for
// Claude's would replace the usage file's counts with none).
func TestPresetsKeepClaudeDecoding(t *testing.T) {
	for name, want := range map[string]bool{"claude": true, "qwen": true, "codex": false, "gemini": false} {
		if got := streamsJSON(Presets[name]); got != want {
			t.Errorf("streamsJSON(the %s preset) = %v, want %v", name, got, want)
		}
	}
}
