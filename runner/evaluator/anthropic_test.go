package evaluator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

const testKey = "sk-ant-test-0123456789-secret"

// fakeMessagesAPI is an httptest server speaking the Messages API: it checks the
// request and answers with reply (or with status and body when status != 200).
type fakeMessagesAPI struct {
	t       *testing.T
	srv     *httptest.Server
	calls   atomic.Int32
	status  int
	body    string // raw body for non-200 replies
	reply   string // assistant text for 200 replies
	stop    string
	delay   time.Duration
	lastReq atomic.Pointer[map[string]any]
}

func newFakeAPI(t *testing.T) *fakeMessagesAPI {
	f := &fakeMessagesAPI{t: t, status: 200, stop: "end_turn"}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeMessagesAPI) serve(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	if got := r.Header.Get("X-Api-Key"); got != testKey {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"bad key"}}`)
		return
	}
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.lastReq.Store(&req)
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if f.status != 200 {
		w.WriteHeader(f.status)
		io.WriteString(w, f.body)
		return
	}
	text, _ := json.Marshal(f.reply)
	fmt.Fprintf(w, `{"id":"msg_01","type":"message","role":"assistant","model":%q,"content":[{"type":"text","text":%s}],"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":120,"output_tokens":30}}`,
		req["model"], text, f.stop)
}

func (f *fakeMessagesAPI) evaluator(t *testing.T, mut func(*AnthropicConfig)) *Anthropic {
	t.Helper()
	cfg := AnthropicConfig{APIKey: testKey, BaseURL: f.srv.URL, MaxRetries: -1, Timeout: 5 * time.Second}
	if mut != nil {
		mut(&cfg)
	}
	a, err := NewAnthropic(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

var sampleRequest = Request{
	Brief:        "Write the design note for the dark-mode toggle.",
	Evaluate:     "Must cover persistence of the preference and the default.",
	Completion:   models.Completion{Type: models.CompletionFile, Path: "feature/7/output.md", MinLength: 100},
	Output:       []byte("# Design\nThe preference is stored in localStorage; default follows the OS.\n"),
	ContractHash: "c0ffee",
}

func TestAnthropicPass(t *testing.T) {
	f := newFakeAPI(t)
	f.reply = `{"pass": true, "diagnosis": "Covers persistence and the default."}`
	a := f.evaluator(t, nil)
	v, err := a.Evaluate(t.Context(), sampleRequest)
	if err != nil || !v.Pass || v.Diagnosis != "Covers persistence and the default." {
		t.Fatalf("got %+v, %v", v, err)
	}
	req := *f.lastReq.Load()
	if req["model"] != DefaultModel || a.Model() != DefaultModel {
		t.Errorf("model = %v, want %v", req["model"], DefaultModel)
	}
	if req["max_tokens"].(float64) != DefaultMaxTokens {
		t.Errorf("max_tokens = %v", req["max_tokens"])
	}
	sys, _ := json.Marshal(req["system"])
	if !strings.Contains(string(sys), "ONLY a JSON object") {
		t.Errorf("system prompt = %s", sys)
	}
	msgs, _ := json.Marshal(req["messages"])
	for _, want := range []string{"dark-mode toggle", "Must cover persistence", "localStorage", "feature/7/output.md"} {
		if !strings.Contains(string(msgs), want) {
			t.Errorf("user message lacks %q: %s", want, msgs)
		}
	}
}

func TestAnthropicFail(t *testing.T) {
	f := newFakeAPI(t)
	f.reply = "Here is my verdict:\n```json\n{\"pass\": false, \"diagnosis\": \"The default is not stated.\"}\n```"
	v, err := f.evaluator(t, func(c *AnthropicConfig) { c.Model = "claude-haiku-4-5" }).Evaluate(t.Context(), sampleRequest)
	if err != nil || v.Pass || v.Diagnosis != "The default is not stated." {
		t.Fatalf("got %+v, %v", v, err)
	}
	if got := (*f.lastReq.Load())["model"]; got != "claude-haiku-4-5" {
		t.Errorf("model = %v", got)
	}
}

func TestAnthropicMalformed(t *testing.T) {
	f := newFakeAPI(t)
	f.reply = "The output looks good to me."
	v, err := f.evaluator(t, nil).Evaluate(t.Context(), sampleRequest)
	if err == nil || v.Pass || !IsInfra(err) || !errors.Is(err, ErrMalformed) {
		t.Fatalf("got %+v, %v; want a malformed InfraError", v, err)
	}

	f.reply = `{"pass": true, "diag`
	f.stop = "max_tokens"
	_, err = f.evaluator(t, nil).Evaluate(t.Context(), sampleRequest)
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "stop reason max_tokens") {
		t.Fatalf("truncated reply: %v", err)
	}
}

func TestAnthropicServerError(t *testing.T) {
	f := newFakeAPI(t)
	f.status = 500
	f.body = `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`
	v, err := f.evaluator(t, nil).Evaluate(t.Context(), sampleRequest)
	if err == nil || v.Pass || !IsInfra(err) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %+v, %v", v, err)
	}
	for _, want := range []string{"anthropic evaluator", "500 Internal Server Error", "api_error"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), testKey) {
		t.Error("error message contains the API key")
	}
	if n := f.calls.Load(); n != 1 {
		t.Errorf("%d calls with retries off", n)
	}
}

func TestAnthropicRetriesThenGivesUp(t *testing.T) {
	f := newFakeAPI(t)
	f.status = 503
	f.body = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	_, err := f.evaluator(t, func(c *AnthropicConfig) { c.MaxRetries = 1 }).Evaluate(t.Context(), sampleRequest)
	if !IsInfra(err) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("err = %v", err)
	}
	if n := f.calls.Load(); n != 2 {
		t.Errorf("%d calls, want 2 (one retry)", n)
	}
}

func TestAnthropicTimeout(t *testing.T) {
	f := newFakeAPI(t)
	f.delay = 10 * time.Second
	f.reply = `{"pass": true, "diagnosis": "too late"}`
	start := time.Now()
	v, err := f.evaluator(t, func(c *AnthropicConfig) { c.Timeout = 200 * time.Millisecond }).Evaluate(t.Context(), sampleRequest)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("timeout took %v", took)
	}
	if err == nil || v.Pass || !IsInfra(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %+v, %v", v, err)
	}
	if !strings.Contains(err.Error(), "no reply within 200ms") {
		t.Errorf("error = %q", err)
	}
}

func TestAnthropicBoundsOutput(t *testing.T) {
	f := newFakeAPI(t)
	f.reply = `{"pass": true, "diagnosis": "ok"}`
	r := sampleRequest
	r.Output = []byte("HEAD-MARK\n" + strings.Repeat("middle filler line\n", 20_000) + "TAIL-MARK")
	if _, err := f.evaluator(t, func(c *AnthropicConfig) { c.MaxOutputBytes = 8 << 10 }).Evaluate(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	msgs, _ := json.Marshal((*f.lastReq.Load())["messages"])
	if len(msgs) > 16<<10 {
		t.Errorf("request carries %d bytes of messages for an 8 KiB bound", len(msgs))
	}
	for _, want := range []string{"HEAD-MARK", "TAIL-MARK", "bytes omitted"} {
		if !strings.Contains(string(msgs), want) {
			t.Errorf("bounded output lacks %q", want)
		}
	}
}

func TestAnthropicConfig(t *testing.T) {
	if _, err := NewAnthropic(AnthropicConfig{}); err == nil {
		t.Error("no error without an API key")
	}
	cfg := AnthropicConfig{APIKey: testKey, Model: "m"}
	for _, s := range []string{cfg.String(), fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), cfg.LogValue().String()} {
		if strings.Contains(s, testKey) {
			t.Errorf("config formats with the key: %s", s)
		}
	}
	// The SDK must not pick a key or endpoint up from the environment behind cfg's back.
	t.Setenv("ANTHROPIC_API_KEY", "sk-from-env")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	f := newFakeAPI(t)
	f.reply = `{"pass": true, "diagnosis": "ok"}`
	if _, err := f.evaluator(t, nil).Evaluate(t.Context(), sampleRequest); err != nil {
		t.Fatalf("environment leaked into the client: %v", err)
	}
}

func TestEvaluatorsRefuseEmptyCriteria(t *testing.T) {
	f := newFakeAPI(t)
	r := sampleRequest
	r.Evaluate = "  "
	if _, err := f.evaluator(t, nil).Evaluate(t.Context(), r); !IsInfra(err) {
		t.Errorf("anthropic: %v", err)
	}
	if f.calls.Load() != 0 {
		t.Error("API called without criteria")
	}
	c, _ := NewCommand([]string{"/bin/sh", "testdata/pass.sh"}, time.Second)
	if _, err := c.Evaluate(t.Context(), r); !IsInfra(err) {
		t.Errorf("command: %v", err)
	}
}
