package runner

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeAnthropic is a scripted Anthropic Messages API on 127.0.0.1, for running the
// real Claude Code CLI against (ANTHROPIC_BASE_URL). The calls of the agent's loop —
// requests that offer tools — get the script's turns in order; every other request to
// /v1/messages (a side call: a title, a command-prefix check) gets a short text with
// zero usage. HEAD / (the CLI's reachability check) gets 200; other endpoints get 404
// and are logged, so a test sees what the CLI asked for.
type fakeAnthropic struct {
	t     testing.TB
	srv   *httptest.Server
	URL   string
	Port  int
	model string
	turns []fakeTurn

	mu        sync.Mutex
	main      []fakeUsage // the usage each loop call was answered with, in order
	side      int         // side calls answered
	probes    int         // HEAD / answered
	unknown   []string    // requests to other endpoints
	results   []string    // the tool results the CLI sent back, as text
	streaming []bool      // whether each loop call asked to stream
}

// fakeTurn is one scripted reply: text and tool calls, and the usage it reports.
type fakeTurn struct {
	Blocks []fakeBlock
	Usage  fakeUsage
}

// fakeBlock is a text block (Tool empty) or a tool call of Tool with Input.
type fakeBlock struct {
	Text  string
	Tool  string
	Input any
}

// fakeUsage is a reply's usage as the API reports it.
type fakeUsage struct {
	Input, Output, CacheRead, CacheWrite int64
}

// sumUsage adds up usages.
func sumUsage(us []fakeUsage) fakeUsage {
	var s fakeUsage
	for _, u := range us {
		s.Input += u.Input
		s.Output += u.Output
		s.CacheRead += u.CacheRead
		s.CacheWrite += u.CacheWrite
	}
	return s
}

func (u fakeUsage) json() map[string]any {
	return map[string]any{
		"input_tokens":                u.Input,
		"output_tokens":               u.Output,
		"cache_read_input_tokens":     u.CacheRead,
		"cache_creation_input_tokens": u.CacheWrite,
	}
}

// newFakeAnthropic starts the server answering as model with turns; it stops when
// the test ends.
func newFakeAnthropic(t testing.TB, model string, turns ...fakeTurn) *fakeAnthropic {
	t.Helper()
	f := &fakeAnthropic{t: t, model: model, turns: turns}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	f.URL = f.srv.URL
	_, port, err := net.SplitHostPort(f.srv.Listener.Addr().String())
	must(t, err)
	f.Port, err = strconv.Atoi(port)
	must(t, err)
	return f
}

// loopCalls returns the usages the agent's loop calls were answered with.
func (f *fakeAnthropic) loopCalls() []fakeUsage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeUsage(nil), f.main...)
}

// report describes what the server saw, for a failing test's message.
func (f *fakeAnthropic) report() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprintf("loop calls %d (%+v, streaming %v), side calls %d, reachability checks %d, tool results %q, other requests %q",
		len(f.main), f.main, f.streaming, f.side, f.probes, f.results, f.unknown)
}

type fakeRequest struct {
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	Tools    []json.RawMessage `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func (f *fakeAnthropic) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Method == http.MethodHead && r.URL.Path == "/" {
		// The CLI's check that the API is reachable, before its first call.
		f.mu.Lock()
		f.probes++
		f.mu.Unlock()
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		f.mu.Lock()
		f.unknown = append(f.unknown, r.Method+" "+r.URL.String())
		f.mu.Unlock()
		f.t.Logf("fake Anthropic API: unscripted request %s %s", r.Method, r.URL)
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"not scripted"}}`, http.StatusNotFound)
		return
	}
	var req fakeRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	var turn fakeTurn
	f.mu.Lock()
	if len(req.Tools) > 0 {
		n := len(f.main)
		if n < len(f.turns) {
			turn = f.turns[n]
		} else {
			turn = fakeTurn{Blocks: []fakeBlock{{Text: "Nothing more to do."}}}
		}
		f.main = append(f.main, turn.Usage)
		f.streaming = append(f.streaming, req.Stream)
		if len(req.Messages) > 0 {
			if res := toolResults(req.Messages[len(req.Messages)-1].Content); res != "" {
				f.results = append(f.results, res)
			}
		}
	} else {
		f.side++
		turn = fakeTurn{Blocks: []fakeBlock{{Text: "Done"}}}
	}
	f.mu.Unlock()
	f.t.Logf("fake Anthropic API: %s %s model %s stream %v tools %d → %d blocks, usage %+v", r.Method, r.URL, req.Model, req.Stream, len(req.Tools), len(turn.Blocks), turn.Usage)
	if req.Stream {
		f.stream(w, turn)
	} else {
		f.whole(w, turn)
	}
}

// toolResults returns the text of the tool_result blocks of a message's content.
func toolResults(content json.RawMessage) string {
	var blocks []struct {
		Type    string          `json:"type"`
		IsError bool            `json:"is_error"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(content, &blocks) != nil {
		return ""
	}
	var out []string
	for _, b := range blocks {
		if b.Type == "tool_result" {
			out = append(out, fmt.Sprintf("error=%v %s", b.IsError, b.Content))
		}
	}
	return strings.Join(out, "; ")
}

// ids numbers messages and tool calls.
var fakeIDs struct {
	sync.Mutex
	n int
}

func fakeID(prefix string) string {
	fakeIDs.Lock()
	defer fakeIDs.Unlock()
	fakeIDs.n++
	return fmt.Sprintf("%s_fake%06d", prefix, fakeIDs.n)
}

// content returns turn's content blocks as the API writes them, and its stop reason.
func (turn fakeTurn) content() ([]map[string]any, string) {
	var out []map[string]any
	stop := "end_turn"
	for _, b := range turn.Blocks {
		if b.Tool == "" {
			out = append(out, map[string]any{"type": "text", "text": b.Text})
			continue
		}
		out = append(out, map[string]any{"type": "tool_use", "id": fakeID("toolu"), "name": b.Tool, "input": b.Input})
		stop = "tool_use"
	}
	return out, stop
}

// whole answers a request that did not ask to stream.
func (f *fakeAnthropic) whole(w http.ResponseWriter, turn fakeTurn) {
	content, stop := turn.content()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": fakeID("msg"), "type": "message", "role": "assistant", "model": f.model,
		"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": turn.Usage.json(),
	})
}

// stream answers with the Messages API's server-sent events: message_start (with the
// input side of the usage), each block's start, delta and stop, message_delta (the
// stop reason and the whole usage) and message_stop.
func (f *fakeAnthropic) stream(w http.ResponseWriter, turn fakeTurn) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	event := func(name string, data map[string]any) {
		data["type"] = name
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	content, stop := turn.content()
	start := turn.Usage
	start.Output = 1 // as the API does: the output so far
	event("message_start", map[string]any{"message": map[string]any{
		"id": fakeID("msg"), "type": "message", "role": "assistant", "model": f.model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": start.json(),
	}})
	for i, c := range content {
		switch c["type"] {
		case "text":
			event("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": c["text"]}})
		case "tool_use":
			event("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "tool_use", "id": c["id"], "name": c["name"], "input": map[string]any{}}})
			in, _ := json.Marshal(c["input"])
			event("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
		}
		event("content_block_stop", map[string]any{"index": i})
	}
	event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": turn.Usage.json()})
	event("message_stop", map[string]any{})
}
