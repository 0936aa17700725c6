package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/handlers/mcp"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
)

// env is the whole HTTP server (API and /mcp, as serve wires it) over a fresh database,
// with one MCP client per agent, each holding only its own agent's token.
type env struct {
	t       *testing.T
	db      *store.DB
	svc     *models.Service
	srv     *httptest.Server
	tokens  map[string]string
	clients map[string]*sdk.ClientSession
}

func newEnv(t *testing.T, dialect string) *env {
	t.Helper()
	db, svc := handlertest.Open(t, dialect)
	_, srv := handlertest.Serve(t, handlers.Deps{Service: svc,
		Extra: []func(*echo.Echo){func(e *echo.Echo) { mcp.Register(e, mcp.New(svc, nil, "test")) }}})
	return &env{t: t, db: db, svc: svc, srv: srv, tokens: map[string]string{}, clients: map[string]*sdk.ClientSession{}}
}

// forEachDialect runs f on SQLite and on PostgreSQL.
func forEachDialect(t *testing.T, f func(t *testing.T, e *env)) {
	handlertest.ForEachDialect(t, func(t *testing.T, d string) { f(t, newEnv(t, d)) })
}

// bearer adds a token to every request of a client.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// protocolFor gives the three clients different protocol versions, so that the
// stateless server is driven by an old client (as deployed MCP clients are) and by
// the newest one.
var protocolFor = map[string]string{"a": "2025-06-18", "b": "2025-11-25"}

// agent creates an agent, a token for it, and an MCP client holding that token.
func (e *env) agent(name string, roles ...string) {
	e.t.Helper()
	handlertest.CreateAgent(e.t, e.svc, name, models.KindHuman, "", roles...)
	tok := handlertest.CreateToken(e.t, e.svc, name, "mcp")
	e.tokens[name] = tok
	cs, err := e.connect(tok, protocolFor[name])
	if err != nil {
		e.t.Fatalf("connect as %s: %v", name, err)
	}
	e.clients[name] = cs
}

// connect opens an MCP client session over HTTP with token.
func (e *env) connect(token, protocol string) (*sdk.ClientSession, error) {
	hc := &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}, Timeout: 30 * time.Second}
	client := sdk.NewClient(&sdk.Implementation{Name: "countersign-test", Version: "test"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: e.srv.URL + "/mcp", HTTPClient: hc, MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		return nil, err
	}
	e.t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; protocol != "" && got != protocol {
		e.t.Fatalf("negotiated protocol %s, want %s", got, protocol)
	}
	return cs, nil
}

// threeAgents is the team of goal-verification-system.md: A builds, B checks, C leads.
func (e *env) threeAgents() {
	e.agent("a", "developer")
	e.agent("b", "tester")
	e.agent("c", "lead")
}

// call calls a tool as agent; a protocol error fails the test.
func (e *env) call(as, tool string, args map[string]any) *sdk.CallToolResult {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := e.clients[as].CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		e.t.Fatalf("%s as %s: protocol error: %v", tool, as, err)
	}
	return res
}

// ok calls a tool that must succeed and returns its structured content.
func (e *env) ok(as, tool string, args map[string]any) obj {
	e.t.Helper()
	res := e.call(as, tool, args)
	if res.IsError {
		e.t.Fatalf("%s as %s %v: tool error: %s", tool, as, args, text(res))
	}
	if len(res.Content) == 0 || text(res) == "" {
		e.t.Fatalf("%s as %s: no text content", tool, as)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		e.t.Fatal(err)
	}
	var out obj
	if err := json.Unmarshal(raw, &out); err != nil || out == nil {
		e.t.Fatalf("%s as %s: structured content %s: %v", tool, as, raw, err)
	}
	return out
}

// refused calls a tool that must be refused with a tool error whose text contains
// every one of wants, and checks that the refusal changed nothing.
func (e *env) refused(as, tool string, args map[string]any, wants ...string) string {
	e.t.Helper()
	before := e.eventCount()
	res := e.call(as, tool, args)
	msg := text(res)
	if !res.IsError {
		e.t.Fatalf("%s as %s %v: accepted, want a tool error containing %q: %s", tool, as, args, wants, msg)
	}
	for _, w := range wants {
		if !strings.Contains(msg, w) {
			e.t.Fatalf("%s as %s %v: tool error %q does not contain %q", tool, as, args, msg, w)
		}
	}
	if after := e.eventCount(); after != before {
		e.t.Fatalf("%s as %s: a refused call wrote %d events", tool, as, after-before)
	}
	return msg
}

// eventCount is the number of stored events.
func (e *env) eventCount() int {
	e.t.Helper()
	return handlertest.EventCount(e.t, e.db)
}

// text joins a result's text content.
func text(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// obj is decoded structured content.
type obj map[string]any

func (o obj) str(k string) string { s, _ := o[k].(string); return s }
func (o obj) id() int64           { f, _ := o["id"].(float64); return int64(f) }
func (o obj) num(k string) int    { f, _ := o[k].(float64); return int(f) }
func (o obj) sub(k string) obj    { m, _ := o[k].(map[string]any); return obj(m) }

func (o obj) list(k string) []obj {
	l, _ := o[k].([]any)
	out := make([]obj, 0, len(l))
	for _, v := range l {
		m, _ := v.(map[string]any)
		out = append(out, obj(m))
	}
	return out
}

// task helpers: the seed's steps as tool calls.

func (e *env) createTask(creator, title, assignee string, goal int64) int64 {
	e.t.Helper()
	args := map[string]any{"creator": creator, "title": title, "brief": "Build " + title + " and test it.", "assign_to": assignee}
	if goal != 0 {
		args["goal_id"] = goal
	}
	t := e.ok(creator, "create_task", args)
	if t.str("state") != "assigned" || t.str("assignee") != assignee {
		e.t.Fatalf("created task: %v", t)
	}
	return t.id()
}

// start has A start an assigned task.
func (e *env) start(id int64) {
	e.t.Helper()
	e.state(id, "in_progress", e.ok("a", "update_task", map[string]any{"agent_name": "a", "task_id": id, "status": "in_progress"}))
}

// submitAndApprove has A submit the task and C approve it: it is then completed.
func (e *env) submitAndApprove(id int64) obj {
	e.t.Helper()
	e.state(id, "review", e.ok("a", "submit_for_review", map[string]any{"agent_name": "a", "task_id": id,
		"summary": "Built form with validation", "files_changed": "login.js, login.css"}))
	t := e.ok("c", "approve_task", map[string]any{"agent_name": "c", "task_id": id})
	e.state(id, "completed", t)
	return t
}

// fullCycle takes an assigned task to verified: A builds, C approves, B verifies.
func (e *env) fullCycle(id int64) {
	e.t.Helper()
	e.start(id)
	e.submitAndApprove(id)
	e.state(id, "verified", e.ok("b", "verify_task", map[string]any{"agent_name": "b", "task_id": id, "notes": "Checked it works"}))
}

func (e *env) state(id int64, want string, got obj) {
	e.t.Helper()
	if got.id() != id || got.str("state") != want {
		e.t.Fatalf("task %d: got %v, want state %s", id, got, want)
	}
}

// goalStatus returns goal_status as agent b (any agent may read it).
func (e *env) goalStatus(id int64) obj {
	e.t.Helper()
	return e.ok("b", "goal_status", map[string]any{"goal_id": id})
}
