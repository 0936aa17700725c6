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
	"github.com/countersign/countersign/models/contract"
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
	Completion:   contract.Completion{Type: contract.CompletionFile, Path: "feature/7/output.md", MinLength: 100},
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

// usageReply is a Messages API reply reporting every usage count.
const usageReply = `{"id":"msg_02","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001",` +
	`"content":[{"type":"text","text":"{\"pass\": true, \"diagnosis\": \"ok\"}"}],"stop_reason":"end_turn","stop_sequence":null,` +
	`"usage":{"input_tokens":1200,"output_tokens":45,"cache_read_input_tokens":300,"cache_creation_input_tokens":7}}`

func wantCount(t *testing.T, name string, got *int64, want int64) {
	t.Helper()
	if got == nil || *got != want {
		t.Errorf("%s = %v, want %d", name, ptrString(got), want)
	}
}

func ptrString[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func TestAnthropicUsage(t *testing.T) {
	f, setReply := wholeReplyServer(t)
	setReply(usageReply)
	v, err := f.evaluator(t, nil).Evaluate(t.Context(), sampleRequest)
	if err != nil || !v.Pass {
		t.Fatalf("got %+v, %v", v, err)
	}
	u := v.Usage
	if u == nil {
		t.Fatal("no usage on the verdict")
	}
	wantCount(t, "input", u.InputTokens, 1200)
	wantCount(t, "output", u.OutputTokens, 45)
	wantCount(t, "cache read", u.CacheReadTokens, 300)
	wantCount(t, "cache write", u.CacheWriteTokens, 7)
	if u.Model != "claude-haiku-4-5-20251001" {
		t.Errorf("model = %q, want the model that answered", u.Model)
	}
	// Pricing is the runner's, with the project's table.
	if u.CostUSD != nil || u.CostSource != "" || u.Price != nil {
		t.Errorf("the evaluator priced its usage: %+v", u)
	}
	u.PriceWith(models.DefaultPrices())
	if u.CostUSD == nil || *u.CostUSD != 0.001464 {
		t.Errorf("priced cost = %v", ptrString(u.CostUSD))
	}

	// Counts the reply leaves out are unknown, not zero.
	setReply(`{"id":"msg_03","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"{\"pass\": false, \"diagnosis\": \"no\"}"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":2}}`)
	v, err = f.evaluator(t, nil).Evaluate(t.Context(), sampleRequest)
	if err != nil || v.Usage == nil {
		t.Fatalf("got %+v, %v", v, err)
	}
	if v.Usage.CacheReadTokens != nil || v.Usage.CacheWriteTokens != nil {
		t.Errorf("absent cache counts made up: %+v", v.Usage)
	}
	wantCount(t, "input", v.Usage.InputTokens, 10)

	// A reply that is no verdict was still billed: the error comes with its usage.
	setReply(`{"id":"msg_04","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"looks fine"}],"stop_reason":"end_turn","usage":{"input_tokens":11,"output_tokens":3}}`)
	v, err = f.evaluator(t, nil).Evaluate(t.Context(), sampleRequest)
	if !errors.Is(err, ErrMalformed) || v.Pass || v.Usage == nil {
		t.Fatalf("got %+v, %v", v, err)
	}
	wantCount(t, "input", v.Usage.InputTokens, 11)

	// A model's text claiming usage is ignored: only the API's counts.
	setReply(`{"id":"msg_05","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"{\"pass\": true, \"diagnosis\": \"ok\", \"usage\": {\"input_tokens\": 999999}}"}],"stop_reason":"end_turn","usage":{"input_tokens":12,"output_tokens":4}}`)
	v, err = f.evaluator(t, nil).Evaluate(t.Context(), sampleRequest)
	if err != nil || v.Usage == nil {
		t.Fatalf("got %+v, %v", v, err)
	}
	wantCount(t, "input", v.Usage.InputTokens, 12)

	// No usage object: the model is known, the tokens are not, and the note says why.
	setReply(`{"id":"msg_06","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"{\"pass\": true}"}],"stop_reason":"end_turn"}`)
	v, err = f.evaluator(t, nil).Evaluate(t.Context(), sampleRequest)
	if err != nil || v.Usage == nil || v.Usage.Tokens() != nil || v.Usage.Model != "claude-haiku-4-5" || v.Usage.Note == "" {
		t.Fatalf("no usage reported: %+v, %v", v.Usage, err)
	}

	// An API error is not billed and has no usage.
	e := newFakeAPI(t)
	e.status, e.body = 500, `{"type":"error","error":{"type":"api_error","message":"boom"}}`
	v, err = e.evaluator(t, nil).Evaluate(t.Context(), sampleRequest)
	if err == nil || v.Usage != nil {
		t.Fatalf("got %+v, %v", v, err)
	}
}

// wholeReplyServer is a Messages API answering with whole replies, so that each case
// sets the usage itself, and the function that sets the next reply.
func wholeReplyServer(t *testing.T) (*fakeMessagesAPI, func(string)) {
	t.Helper()
	// A server answering with whole replies, so that each case sets the usage itself.
	var reply atomic.Pointer[string]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/messages" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, *reply.Load())
	}))
	t.Cleanup(srv.Close)
	f := &fakeMessagesAPI{srv: srv}
	setReply := func(s string) { reply.Store(&s) }
	return f, setReply
}

func TestAnthropicBaseURLFromEnvironment(t *testing.T) {
	f := newFakeAPI(t)
	f.reply = `{"pass": true, "diagnosis": "ok"}`
	other := newFakeAPI(t)
	other.reply = `{"pass": true, "diagnosis": "ok"}`

	// ANTHROPIC_BASE_URL alone routes the client.
	t.Setenv(EnvBaseURL, f.srv.URL)
	base, err := ResolveBaseURL("", "flag -evaluator-base-url")
	if err != nil || base != f.srv.URL {
		t.Fatalf("ResolveBaseURL = %q, %v", base, err)
	}
	a, err := NewAnthropic(AnthropicConfig{APIKey: testKey, BaseURL: base, MaxRetries: -1, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Evaluate(t.Context(), sampleRequest); err != nil || f.calls.Load() != 1 {
		t.Fatalf("env base URL: %v, %d calls", err, f.calls.Load())
	}

	// The flag wins over it.
	base, err = ResolveBaseURL(other.srv.URL+"/", "flag -evaluator-base-url")
	if err != nil {
		t.Fatal(err)
	}
	a, err = NewAnthropic(AnthropicConfig{APIKey: testKey, BaseURL: base, MaxRetries: -1, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Evaluate(t.Context(), sampleRequest); err != nil || other.calls.Load() != 1 || f.calls.Load() != 1 {
		t.Fatalf("flag base URL: %v, %d/%d calls", err, other.calls.Load(), f.calls.Load())
	}

	// Neither: the SDK's default.
	t.Setenv(EnvBaseURL, "")
	if base, err := ResolveBaseURL("", "flag -evaluator-base-url"); base != "" || err != nil {
		t.Errorf("no base URL: %q, %v", base, err)
	}
}

func TestBaseURLValidation(t *testing.T) {
	for _, ok := range []string{"http://127.0.0.1:8080", "https://gateway.example.com/anthropic", "HTTPS://gw.example.com/", "http://[::1]:9000/v"} {
		if err := CheckBaseURL(ok); err != nil {
			t.Errorf("CheckBaseURL(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"gateway.example.com", "localhost:8080", "/v1", "ftp://x.example.com", "http://", "http://:80",
		"https://x.example.com/?k=v", "https://x.example.com/#f", "http://x.example.com:99999", "http://x.example.com:0", "http://%zz"} {
		if err := CheckBaseURL(bad); err == nil {
			t.Errorf("CheckBaseURL(%q) accepted it", bad)
		}
	}
	// Errors name their source, and never show a password.
	_, err := ResolveBaseURL("ftp://user:hunter2@x.example.com", "flag -evaluator-base-url")
	if err == nil || !strings.Contains(err.Error(), "flag -evaluator-base-url") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("flag error: %v", err)
	}
	t.Setenv(EnvBaseURL, "not a url")
	if _, err := ResolveBaseURL("", "flag -evaluator-base-url"); err == nil || !strings.Contains(err.Error(), EnvBaseURL) {
		t.Errorf("env error: %v", err)
	}
	if _, err := NewAnthropic(AnthropicConfig{APIKey: testKey, BaseURL: "api.anthropic.com"}); err == nil {
		t.Error("NewAnthropic took a relative base URL")
	}
	cfg := AnthropicConfig{APIKey: testKey, BaseURL: "https://u:hunter2@gw.example.com"}
	if s := cfg.String() + cfg.LogValue().String(); strings.Contains(s, "hunter2") {
		t.Errorf("config formats with the URL's password: %s", s)
	}
	for in, want := range map[string]uint16{"http://h": 80, "https://h/x": 443, "http://h:8443": 8443} {
		if got, err := URLPort(in); got != want || err != nil {
			t.Errorf("URLPort(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}
