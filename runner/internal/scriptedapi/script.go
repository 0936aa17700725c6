package scriptedapi

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Usage is what a reply reports it used, counted as OpenAI and Gemini count: Input
// includes the Cached tokens read from a prompt cache, and Output includes the
// Reasoning tokens.
type Usage struct {
	Input, Cached, Output, Reasoning int64
}

// Sum adds usages up.
func Sum(us []Usage) Usage {
	var s Usage
	for _, u := range us {
		s.Input += u.Input
		s.Cached += u.Cached
		s.Output += u.Output
		s.Reasoning += u.Reasoning
	}
	return s
}

// Call is a tool call the scripted model makes: the tool's name and its arguments,
// sent as JSON. A Custom call (the Responses API's free-form tools, as Codex's exec
// of JavaScript) sends Args, a string, as its input as is.
type Call struct {
	Name   string
	Args   any
	Custom bool
}

// Turn is one scripted reply of the agent's loop: its text (none when empty), then
// its tool calls, and the usage it reports.
type Turn struct {
	Text  string
	Calls []Call
	Usage Usage
}

// closing is the reply past the end of the script: no tool call, so the loop ends.
var closing = Turn{Text: "Nothing more to do."}

// Server is a scripted model API started by NewResponses, NewChat or NewGemini.
type Server struct {
	// URL is the base URL to give the client: http://127.0.0.1:PORT/v1 for the
	// OpenAI protocols, http://127.0.0.1:PORT for Gemini's (which adds /v1beta).
	URL string
	// Port is the server's TCP port, for a sandbox's connect list.
	Port int

	t     testing.TB
	name  string
	model string
	turns []Turn

	mu        sync.Mutex
	loop      []Usage  // the usage each loop call was answered with, in order
	side      int      // side calls answered
	unknown   []string // requests the protocol does not serve
	results   []string // the tool results the client sent back, as text
	keys      []string // the distinct credentials requests carried
	streaming []bool   // whether each loop call asked to stream
	seenIDs   map[string]bool
}

// start serves h for t on 127.0.0.1; the server stops when t ends.
func start(t testing.TB, name, model, path string, turns []Turn, h func(*Server) http.HandlerFunc) *Server {
	t.Helper()
	s := &Server{t: t, name: name, model: model, turns: turns}
	srv := httptest.NewServer(h(s))
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if s.Port, err = strconv.Atoi(port); err != nil {
		t.Fatal(err)
	}
	s.URL = srv.URL + path
	return s
}

// next records a call of the agent's loop, with the tool results it carries, and
// returns its turn and its number (from 0), which makes the ids of its tool calls.
func (s *Server) next(stream bool, results []result) (Turn, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, turn := len(s.loop), closing
	if n < len(s.turns) {
		turn = s.turns[n]
	}
	s.loop = append(s.loop, turn.Usage)
	s.streaming = append(s.streaming, stream)
	if s.seenIDs == nil {
		s.seenIDs = map[string]bool{}
	}
	// Each request carries the whole conversation: a result is recorded once.
	for _, r := range results {
		if !s.seenIDs[r.id] {
			s.seenIDs[r.id] = true
			s.results = append(s.results, r.text)
		}
	}
	return turn, n
}

// result is a tool result a request carried: the call it answers and its text.
type result struct{ id, text string }

// sideCall records a request that offered no tools.
func (s *Server) sideCall() Turn {
	s.mu.Lock()
	s.side++
	s.mu.Unlock()
	return Turn{Text: "Done"}
}

// notServed answers a request the protocol does not serve with 404, recording it.
func (s *Server) notServed(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.unknown = append(s.unknown, r.Method+" "+r.URL.String())
	s.mu.Unlock()
	s.t.Logf("scripted %s API: unscripted request %s %s", s.name, r.Method, r.URL)
	http.Error(w, `{"error":{"message":"not scripted","code":404}}`, http.StatusNotFound)
}

// sawKey records the credential a request carried (a bearer token or an API key
// header), once per distinct value.
func (s *Server) sawKey(r *http.Request) {
	k := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if k == "" {
		k = r.Header.Get("X-Goog-Api-Key")
	}
	if k == "" {
		k = r.URL.Query().Get("key")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, seen := range s.keys {
		if seen == k {
			return
		}
	}
	s.keys = append(s.keys, k)
}

// LoopCalls returns the usage each call of the agent's loop was answered with.
func (s *Server) LoopCalls() []Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Usage(nil), s.loop...)
}

// Sum is the usage the loop's calls were answered with, added up: what a client
// that reports usage must report.
func (s *Server) Sum() Usage { return Sum(s.LoopCalls()) }

// SideCalls is how many requests offered no tools.
func (s *Server) SideCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.side
}

// ToolResults returns the tool results the client sent back, in order, as text.
func (s *Server) ToolResults() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.results...)
}

// Keys returns the distinct credentials the requests carried ("" for none).
func (s *Server) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...)
}

// Unscripted returns the requests answered 404, as "METHOD URL".
func (s *Server) Unscripted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.unknown...)
}

// Report describes what the server saw, for a failing test's message.
func (s *Server) Report() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%s: loop calls %d (%+v, streaming %v), side calls %d, tool results %q, other requests %q",
		s.name, len(s.loop), s.loop, s.streaming, s.side, s.results, s.unknown)
}

// argsJSON is a call's arguments as the JSON text the protocols carry.
func argsJSON(c Call) string {
	b, err := json.Marshal(c.Args)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// sse writes server-sent events, flushing each.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

// startSSE answers 200 with an event stream.
func startSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

// event writes one event: its name line when name is set, then data as JSON.
func (e *sse) event(name string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err) // the scripts' own values always marshal
	}
	if name != "" {
		fmt.Fprintf(e.w, "event: %s\n", name)
	}
	fmt.Fprintf(e.w, "data: %s\n\n", b)
	if e.f != nil {
		e.f.Flush()
	}
}

// raw writes a data line as is ([DONE]).
func (e *sse) raw(data string) {
	fmt.Fprintf(e.w, "data: %s\n\n", data)
	if e.f != nil {
		e.f.Flush()
	}
}

// writeJSON answers 200 with v.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
