package evaluator

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/internal/proctest"
)

func script(t *testing.T, name string, timeout time.Duration) *Command {
	t.Helper()
	c, err := NewCommand([]string{"/bin/sh", filepath.Join("testdata", name)}, timeout)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCommandPass(t *testing.T) {
	v, err := script(t, "pass.sh", 10*time.Second).Evaluate(t.Context(), sampleRequest)
	if err != nil || !v.Pass || v.Diagnosis != "every criterion is met" {
		t.Fatalf("got %+v, %v", v, err)
	}
}

func TestCommandFail(t *testing.T) {
	v, err := script(t, "fail.sh", 10*time.Second).Evaluate(t.Context(), sampleRequest)
	if err != nil || v.Pass || v.Diagnosis != "criterion 2 (error handling) is not addressed" {
		t.Fatalf("got %+v, %v", v, err)
	}
}

func TestCommandClaudeJSONOutput(t *testing.T) {
	v, err := script(t, "claude_json.sh", 10*time.Second).Evaluate(t.Context(), sampleRequest)
	if err != nil || v.Pass || v.Diagnosis != "no tests for the null input" {
		t.Fatalf("got %+v, %v", v, err)
	}
}

func TestCommandGarbage(t *testing.T) {
	v, err := script(t, "garbage.sh", 10*time.Second).Evaluate(t.Context(), sampleRequest)
	if err == nil || v.Pass || !IsInfra(err) || !errors.Is(err, ErrMalformed) {
		t.Fatalf("got %+v, %v", v, err)
	}
	if !strings.Contains(err.Error(), "looks fine") {
		t.Errorf("error does not quote the reply: %v", err)
	}
}

func TestCommandExit1(t *testing.T) {
	v, err := script(t, "exit1.sh", 10*time.Second).Evaluate(t.Context(), sampleRequest)
	if err == nil || v.Pass || !IsInfra(err) {
		t.Fatalf("got %+v, %v; a failing tool must not give a verdict", v, err)
	}
	for _, want := range []string{"exited with status 1", "rate limited"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestCommandHang(t *testing.T) {
	start := time.Now()
	v, err := script(t, "hang.sh", 300*time.Millisecond).Evaluate(t.Context(), sampleRequest)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("hung command took %v to give up", took)
	}
	if err == nil || v.Pass || !IsInfra(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %+v, %v", v, err)
	}
	if !strings.Contains(err.Error(), "no verdict within 300ms") {
		t.Errorf("error = %q", err)
	}
}

func TestCommandCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	_, err := script(t, "hang.sh", time.Minute).Evaluate(ctx, sampleRequest)
	if !IsInfra(err) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestCommandRequestOnStdinNotArgv(t *testing.T) {
	dir := t.TempDir()
	c := script(t, "record.sh", 10*time.Second)
	c.Env = append(os.Environ(), "RECORD_DIR="+dir)
	c.WithMaxOutputBytes(1024)
	r := sampleRequest
	r.Output = []byte("$(touch pwned) " + strings.Repeat("y", 5000))
	if _, err := c.Evaluate(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "stdin.json"))
	if err != nil {
		t.Fatal(err)
	}
	var in CommandInput
	if err := json.Unmarshal(raw, &in); err != nil {
		t.Fatalf("stdin is not a CommandInput: %v", err)
	}
	if in.Evaluate != r.Evaluate || in.Brief != r.Brief || in.ContractHash != "c0ffee" || in.Completion.Path != "feature/7/output.md" {
		t.Errorf("request fields = %+v", in)
	}
	if in.OutputBytes != len(r.Output) || len(in.Output) > 1100 || !strings.Contains(in.Output, "bytes omitted") {
		t.Errorf("output not bounded: %d bytes of %d", len(in.Output), in.OutputBytes)
	}
	if !strings.Contains(in.Prompt, "ONLY a JSON object") || !strings.Contains(in.Prompt, r.Evaluate) {
		t.Error("prompt missing from the input")
	}
	argv, _ := os.ReadFile(filepath.Join(dir, "argv.txt"))
	if strings.TrimSpace(string(argv)) != "" {
		t.Errorf("arguments carried data: %q", argv)
	}
	if _, err := os.Stat("pwned"); err == nil {
		os.Remove("pwned")
		t.Error("output was executed")
	}
}

func TestNewCommandValidates(t *testing.T) {
	if _, err := NewCommand(nil, time.Second); err == nil {
		t.Error("no error for an empty argv")
	}
	c, err := NewCommand([]string{"definitely-not-a-command-xyz"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.timeout != DefaultCommandTimeout {
		t.Errorf("timeout = %v", c.timeout)
	}
	_, err = c.Evaluate(t.Context(), sampleRequest)
	if !IsInfra(err) || !strings.Contains(err.Error(), "running definitely-not-a-command-xyz") {
		t.Errorf("err = %v", err)
	}
}

// withEnv returns the evaluator running testdata/name with extra variables.
func withEnv(t *testing.T, name string, timeout time.Duration, env ...string) *Command {
	t.Helper()
	c := script(t, name, timeout)
	c.Env = append(os.Environ(), env...)
	return c
}

// wantGone fails when the pid recorded in dir/child.pid outlives the evaluation.
func wantGone(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	proctest.WantGone(t, pid, "the evaluator command")
}

func TestCommandTimeoutKillsItsChildren(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	_, err := withEnv(t, "child.sh", 300*time.Millisecond, "RECORD_DIR="+dir, "MODE=hang").Evaluate(t.Context(), sampleRequest)
	if !IsInfra(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("took %v", took)
	}
	wantGone(t, dir)
}

func TestCommandBackgroundChildAfterVerdict(t *testing.T) {
	// The command answers and exits, leaving a child that holds stdout open: the
	// verdict stands, at once, and the child does not survive.
	dir := t.TempDir()
	start := time.Now()
	v, err := withEnv(t, "child.sh", 10*time.Second, "RECORD_DIR="+dir).Evaluate(t.Context(), sampleRequest)
	if err != nil || !v.Pass || v.Diagnosis != "answered" {
		t.Fatalf("got %+v, %v", v, err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("waited %v for a background child", took)
	}
	wantGone(t, dir)
}

func TestCommandStdoutBound(t *testing.T) {
	verdict := `{"pass": true, "diagnosis": "padded"}` + "\n"
	exact := maxCommandStdout - len(verdict)
	v, err := withEnv(t, "pad.sh", 10*time.Second, "PAD="+strconv.Itoa(exact)).Evaluate(t.Context(), sampleRequest)
	if err != nil || !v.Pass || v.Diagnosis != "padded" {
		t.Fatalf("stdout of exactly %d bytes: got %+v, %v", maxCommandStdout, v, err)
	}
	v, err = withEnv(t, "pad.sh", 10*time.Second, "PAD="+strconv.Itoa(exact+1)).Evaluate(t.Context(), sampleRequest)
	if v.Pass || !IsInfra(err) || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "printed more than 1048576 bytes") {
		t.Fatalf("one byte over: got %+v, %v", v, err)
	}
}

func TestCommandStderrTailInError(t *testing.T) {
	_, err := script(t, "stderr.sh", 10*time.Second).Evaluate(t.Context(), sampleRequest)
	if !IsInfra(err) || !strings.Contains(err.Error(), "exited with status 2: \"…eeee") ||
		!strings.HasSuffix(err.Error(), `evaluator: rate limited"`) {
		t.Fatalf("err = %v: want the end of stderr, its last line included", err)
	}
	if strings.Contains(err.Error(), "hhh") || len(err.Error()) > 700 {
		t.Fatalf("error not bounded to the end of stderr: %d bytes", len(err.Error()))
	}
}

func TestCommandEnvIsExactlyEnv(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("COUNTERSIGN_TEST_SECRET", "s3cret")
	c := script(t, "env.sh", 10*time.Second)
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "RECORD_DIR=" + dir}
	if _, err := c.Evaluate(t.Context(), sampleRequest); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	env := "\n" + string(b)
	for _, k := range []string{"COUNTERSIGN_TEST_SECRET", "HOME", "USER"} {
		if strings.Contains(env, "\n"+k+"=") {
			t.Errorf("the command saw %s, which Env does not hold:%s", k, env)
		}
	}
	if !strings.Contains(env, "\nRECORD_DIR="+dir+"\n") {
		t.Errorf("environment:%s", env)
	}
}

// replying runs testdata/reply.sh printing reply.
func replying(t *testing.T, reply string) (Verdict, error) {
	t.Helper()
	return withEnv(t, "reply.sh", 10*time.Second, "REPLY="+reply).Evaluate(t.Context(), sampleRequest)
}

func TestCommandUsagePassthrough(t *testing.T) {
	v, err := replying(t, `{"pass": true, "diagnosis": "ok", "usage": {"input_tokens": 900, "output_tokens": 40,`+
		` "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5, "cost_usd": 0.0021, "model": "claude-haiku-4-5"}}`)
	if err != nil || !v.Pass || v.Usage == nil {
		t.Fatalf("got %+v, %v", v, err)
	}
	u := v.Usage
	wantCount(t, "input", u.InputTokens, 900)
	wantCount(t, "output", u.OutputTokens, 40)
	wantCount(t, "cache read", u.CacheReadTokens, 100)
	wantCount(t, "cache write", u.CacheWriteTokens, 5)
	if u.CostUSD == nil || *u.CostUSD != 0.0021 || u.CostSource != models.CostReported || u.Model != "claude-haiku-4-5" {
		t.Errorf("usage = %+v", u)
	}

	// Partial usage: what is missing stays unknown, and the runner prices the rest.
	v, err = replying(t, `{"pass": false, "diagnosis": "no", "usage": {"output_tokens": 7}}`)
	if err != nil || v.Usage == nil || v.Usage.InputTokens != nil || v.Usage.CostUSD != nil || v.Usage.Model != "" {
		t.Fatalf("partial usage: %+v, %v", v.Usage, err)
	}
	wantCount(t, "output", v.Usage.OutputTokens, 7)

	// No usage: nil, not zero.
	if v, err := replying(t, `{"pass": true, "diagnosis": "ok"}`); err != nil || v.Usage != nil {
		t.Fatalf("no usage: %+v, %v", v.Usage, err)
	}
}

func TestCommandUsageGarbageIgnored(t *testing.T) {
	for _, usage := range []string{
		`"lots"`, `42`, `null`, `[1, 2]`, `{}`,
		`{"input_tokens": -5, "output_tokens": "7", "cache_read_input_tokens": 1.5, "cache_creation_input_tokens": null, "cost_usd": -1, "model": 3}`,
		`{"input_tokens": 1e400, "output_tokens": 99999999999999999999, "cost_usd": "free"}`,
	} {
		v, err := replying(t, `{"pass": true, "diagnosis": "ok", "usage": `+usage+`}`)
		if err != nil || !v.Pass || v.Diagnosis != "ok" {
			t.Errorf("usage %s broke the verdict: %+v, %v", usage, v, err)
			continue
		}
		if v.Usage != nil {
			t.Errorf("usage %s = %+v, want nil", usage, v.Usage)
		}
	}
	// Good fields survive bad neighbours.
	v, err := replying(t, `{"pass": true, "diagnosis": "ok", "usage": {"input_tokens": 12, "output_tokens": -1, "cost_usd": "x"}}`)
	if err != nil || v.Usage == nil || v.Usage.OutputTokens != nil || v.Usage.CostUSD != nil {
		t.Fatalf("mixed usage: %+v, %v", v.Usage, err)
	}
	wantCount(t, "input", v.Usage.InputTokens, 12)
}

func TestCommandClaudeJSONUsage(t *testing.T) {
	// `claude -p --output-format json`: the CLI's usage and total cost count; a
	// "usage" inside the model's text does not.
	v, err := replying(t, `{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.0042,`+
		`"usage":{"input_tokens":3000,"output_tokens":80,"cache_read_input_tokens":0,"cache_creation_input_tokens":200},`+
		`"result":"{\"pass\": true, \"diagnosis\": \"ok\", \"usage\": {\"input_tokens\": 1}}"}`)
	if err != nil || !v.Pass || v.Usage == nil {
		t.Fatalf("got %+v, %v", v, err)
	}
	wantCount(t, "input", v.Usage.InputTokens, 3000)
	wantCount(t, "cache read", v.Usage.CacheReadTokens, 0)
	wantCount(t, "cache write", v.Usage.CacheWriteTokens, 200)
	if v.Usage.CostUSD == nil || *v.Usage.CostUSD != 0.0042 || v.Usage.CostSource != models.CostReported {
		t.Errorf("cost = %v (%s)", ptrString(v.Usage.CostUSD), v.Usage.CostSource)
	}
	// The existing fixture reports nothing: nil.
	v, err = script(t, "claude_json.sh", 10*time.Second).Evaluate(t.Context(), sampleRequest)
	if err != nil || v.Usage != nil {
		t.Fatalf("claude_json.sh: %+v, %v", v.Usage, err)
	}
}
