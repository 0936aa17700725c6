package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// realKey is the provider key the gateway holds; no client may ever see it.
const realKey = "sk-real-provider-key-0123456789abcdef"

// script is one reply's usage, in the gateway's convention (input excludes cache).
type script struct {
	In, Out, CacheRead, CacheWrite int64
	// Chunks is how many text deltas a stream carries (at least 1).
	Chunks int
}

// scripted is a scripted provider speaking the Messages, Responses and Chat
// Completions APIs, streamed (SSE) or not, answering every call with its script's
// usage. It refuses any call not signed with realKey, as the real ones would.
type scripted struct {
	t   testing.TB
	srv *httptest.Server

	mu         sync.Mutex
	script     script
	calls      int
	keys       []string      // the key headers each call arrived with
	unfinished int           // requests whose body never ended
	onRead     func(n int64) // when set, told how much of a body has arrived, as it arrives
	last       []byte        // the last call's body (only the last: a benchmark makes thousands)
	holdAt1    func()        // when set, a stream waits in it after its first event
	delay      time.Duration // each call waits this long before it answers
	pace       time.Duration // a stream waits this long before each text delta
}

func newScripted(t testing.TB, s script) *scripted {
	u := &scripted{t: t, script: s}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.srv.Close)
	return u
}

// config is a gateway configuration pointing at u with the test prices.
func (u *scripted) config() Config {
	return Config{
		Anthropic: Upstream{BaseURL: u.srv.URL, Key: realKey},
		OpenAI:    Upstream{BaseURL: u.srv.URL + "/v1", Key: realKey},
		Prices:    testPrices(),
	}
}

func (u *scripted) serve(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	onRead := u.onRead
	u.mu.Unlock()
	in := io.Reader(r.Body)
	if onRead != nil {
		in = &countingReader{r: r.Body, n: onRead}
	}
	body, err := io.ReadAll(in)
	if err != nil { // an unfinished request is no call: a provider answers none
		u.mu.Lock()
		u.unfinished++
		u.mu.Unlock()
		return
	}
	key := r.Header.Get("x-api-key")
	if key == "" {
		key = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	u.mu.Lock()
	u.calls++
	u.keys = append(u.keys, key)
	u.last = body
	s, hold, delay, pace := u.script, u.holdAt1, u.delay, u.pace
	u.mu.Unlock()
	time.Sleep(delay)
	if key != realKey {
		http.Error(w, `{"type":"error","error":{"type":"authentication_error","message":"bad key"}}`, 401)
		return
	}
	var req struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	_ = json.Unmarshal(body, &req)
	if s.Chunks < 1 {
		s.Chunks = 1
	}
	ev := &sse{w: w, hold: hold, pace: pace}
	switch r.URL.Path {
	case "/v1/messages":
		u.messages(w, ev, req.Model, req.Stream, s)
	case "/v1/messages/count_tokens":
		writeJSON(w, map[string]any{"input_tokens": s.In})
	case "/v1/responses":
		u.responses(w, ev, req.Model, req.Stream, s)
	case "/v1/chat/completions":
		u.chat(w, ev, req.Model, req.Stream, req.StreamOptions != nil && req.StreamOptions.IncludeUsage, s)
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// sse writes server-sent events, flushing each; hold runs after the first.
type sse struct {
	w    http.ResponseWriter
	n    int
	hold func()
	pace time.Duration
}

func (e *sse) start() {
	e.w.Header().Set("Content-Type", "text/event-stream")
	e.w.WriteHeader(200)
}

func (e *sse) send(name string, data any) {
	raw, _ := json.Marshal(data)
	if name != "" {
		fmt.Fprintf(e.w, "event: %s\n", name)
	}
	fmt.Fprintf(e.w, "data: %s\n\n", raw)
	e.w.(http.Flusher).Flush()
	if e.n++; e.n == 1 && e.hold != nil {
		e.hold()
	}
}

func (u *scripted) messages(w http.ResponseWriter, ev *sse, model string, stream bool, s script) {
	text := strings.Repeat("word ", s.Chunks)
	if !stream {
		writeJSON(w, map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": model,
			"content":     []any{map[string]any{"type": "text", "text": text}},
			"stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": s.In, "output_tokens": s.Out,
				"cache_read_input_tokens": s.CacheRead, "cache_creation_input_tokens": s.CacheWrite}})
		return
	}
	ev.start()
	ev.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": s.In, "output_tokens": 1,
			"cache_read_input_tokens": s.CacheRead, "cache_creation_input_tokens": s.CacheWrite}}})
	ev.send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "text", "text": ""}})
	for i := 0; i < s.Chunks; i++ {
		time.Sleep(ev.pace)
		ev.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": "word "}})
	}
	ev.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	ev.send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": s.Out}})
	ev.send("message_stop", map[string]any{"type": "message_stop"})
}

// openaiUsageOf is s as the Responses API reports it (cached inside input).
func responsesUsage(s script) map[string]any {
	return map[string]any{"input_tokens": s.In + s.CacheRead, "output_tokens": s.Out,
		"input_tokens_details":  map[string]any{"cached_tokens": s.CacheRead},
		"output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": s.In + s.CacheRead + s.Out}
}

func (u *scripted) responses(w http.ResponseWriter, ev *sse, model string, stream bool, s script) {
	resp := func(status string, usage any) map[string]any {
		return map[string]any{"id": "resp_1", "object": "response", "status": status, "model": model,
			"output": []any{}, "usage": usage}
	}
	if !stream {
		writeJSON(w, resp("completed", responsesUsage(s)))
		return
	}
	ev.start()
	ev.send("response.created", map[string]any{"type": "response.created", "response": resp("in_progress", nil)})
	for i := 0; i < s.Chunks; i++ {
		ev.send("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "delta": "word "})
	}
	ev.send("response.completed", map[string]any{"type": "response.completed", "response": resp("completed", responsesUsage(s))})
}

func (u *scripted) chat(w http.ResponseWriter, ev *sse, model string, stream, withUsage bool, s script) {
	usage := map[string]any{"prompt_tokens": s.In + s.CacheRead, "completion_tokens": s.Out,
		"prompt_tokens_details": map[string]any{"cached_tokens": s.CacheRead}, "total_tokens": s.In + s.CacheRead + s.Out}
	if !stream {
		writeJSON(w, map[string]any{"id": "chat_1", "object": "chat.completion", "model": model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": "hi"},
				"finish_reason": "stop"}}, "usage": usage})
		return
	}
	ev.start()
	chunk := func(choices []any, usage any) map[string]any {
		c := map[string]any{"id": "chat_1", "object": "chat.completion.chunk", "model": model, "choices": choices}
		if withUsage {
			c["usage"] = usage
		}
		return c
	}
	for i := 0; i < s.Chunks; i++ {
		ev.send("", chunk([]any{map[string]any{"index": 0, "delta": map[string]any{"content": "word "}}}, nil))
	}
	if withUsage {
		ev.send("", chunk([]any{}, usage))
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// count is how many calls reached u.
func (u *scripted) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls
}

// keysSeen is the key each call arrived with.
func (u *scripted) keysSeen() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.keys...)
}

// lastBody is the last call's body.
func (u *scripted) lastBody() []byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.last
}

// countingReader tells n the bytes read so far after each read.
type countingReader struct {
	r   io.Reader
	got int64
	n   func(int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.got += int64(n)
	c.n(c.got)
	return n, err
}
