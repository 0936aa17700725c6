package handlers_test

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
)

// apiEnv is a running API server over a fresh database of one dialect.
type apiEnv struct {
	t      *testing.T
	db     *store.DB
	svc    *models.Service
	srv    *httptest.Server
	tokens map[string]string
	agents map[string]*models.Agent
}

func newAPIEnv(t *testing.T, dialect string) *apiEnv {
	t.Helper()
	db, svc := handlertest.Open(t, dialect)
	_, srv := handlertest.Serve(t, handlers.Deps{Service: svc})
	return &apiEnv{t: t, db: db, svc: svc, srv: srv, tokens: map[string]string{}, agents: map[string]*models.Agent{}}
}

// forEachDialect runs f as a subtest on SQLite and on PostgreSQL.
func forEachDialect(t *testing.T, f func(t *testing.T, e *apiEnv)) {
	handlertest.ForEachDialect(t, func(t *testing.T, d string) { f(t, newAPIEnv(t, d)) })
}

// agent creates an agent with a bearer token.
func (e *apiEnv) agent(name string, kind models.AgentKind, roles ...string) *models.Agent {
	e.t.Helper()
	a := handlertest.CreateAgent(e.t, e.svc, name, kind, "", roles...)
	e.tokens[name], e.agents[name] = handlertest.CreateToken(e.t, e.svc, name, "test"), a
	return a
}

// resp is a decoded API response.
type resp struct {
	Status int
	Body   map[string]any
	Raw    []byte
}

func (r resp) errCode() string     { return r.errField("code") }
func (r resp) errRule() string     { return r.errField("rule") }
func (r resp) errState() string    { return r.errField("state") }
func (r resp) str(k string) string { s, _ := r.Body[k].(string); return s }
func (r resp) num(k string) int64  { f, _ := r.Body[k].(float64); return int64(f) }

func (r resp) errField(k string) string {
	m, _ := r.Body["error"].(map[string]any)
	s, _ := m[k].(string)
	return s
}

func (r resp) fields() map[string]any {
	m, _ := r.Body["error"].(map[string]any)
	f, _ := m["fields"].(map[string]any)
	return f
}

// do sends a request as agent (empty: no token) with body (a string is sent as is).
func (e *apiEnv) do(as, method, path string, body any) resp {
	e.t.Helper()
	return e.send(as, method, path, "application/json", handlertest.Body(body))
}

// send sends body as content type ctype as agent (empty: no token) and decodes the
// answer as JSON where it is.
func (e *apiEnv) send(as, method, path, ctype string, body io.Reader) resp {
	e.t.Helper()
	tok := ""
	if as != "" {
		tok = e.tokens[as]
	}
	status, raw := handlertest.Request(e.t, method, e.srv.URL+"/api/v1"+path, tok, ctype, body)
	r := resp{Status: status, Raw: raw, Body: map[string]any{}}
	_ = json.Unmarshal(raw, &r.Body)
	return r
}

// must sends a request and fails the test unless it answers want.
func (e *apiEnv) must(want int, as, method, path string, body any) resp {
	e.t.Helper()
	r := e.do(as, method, path, body)
	if r.Status != want {
		e.t.Fatalf("%s %s as %s: status %d, want %d: %s", method, path, as, r.Status, want, r.Raw)
	}
	return r
}

// task returns the task's current state from the API.
func (e *apiEnv) taskState(id int64) string {
	e.t.Helper()
	r := e.must(200, e.anyToken(), "GET", "/tasks/"+itoa(id), nil)
	t, _ := r.Body["task"].(map[string]any)
	s, _ := t["state"].(string)
	return s
}

func (e *apiEnv) goalState(id int64) string {
	e.t.Helper()
	r := e.must(200, e.anyToken(), "GET", "/goals/"+itoa(id), nil)
	g, _ := r.Body["goal"].(map[string]any)
	s, _ := g["state"].(string)
	return s
}

func (e *apiEnv) anyToken() string {
	for n := range e.tokens {
		return n
	}
	e.t.Fatal("no agent with a token")
	return ""
}

// eventCount is the number of events stored: a refused request must not change it.
func (e *apiEnv) eventCount() int {
	e.t.Helper()
	return handlertest.EventCount(e.t, e.db)
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
