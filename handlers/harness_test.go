package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/models/store/storetest"
	"github.com/countersign/countersign/runner/ledger"
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
	db := storetest.Open(t, dialect)
	svc := models.NewService(db, ledger.Composer{})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewServer(handlers.NewServer(handlers.Deps{Service: svc, Log: log, Version: "test"}))
	t.Cleanup(srv.Close)
	return &apiEnv{t: t, db: db, svc: svc, srv: srv, tokens: map[string]string{}, agents: map[string]*models.Agent{}}
}

// forEachDialect runs f as a subtest on SQLite and on PostgreSQL.
func forEachDialect(t *testing.T, f func(t *testing.T, e *apiEnv)) {
	for _, d := range storetest.Dialects() {
		t.Run(d, func(t *testing.T) { f(t, newAPIEnv(t, d)) })
	}
}

// agent creates an agent with a bearer token.
func (e *apiEnv) agent(name string, kind models.AgentKind, roles ...string) *models.Agent {
	e.t.Helper()
	a := &models.Agent{Name: name, Kind: kind, Roles: roles}
	if kind == models.KindWorker {
		a.Command = "true"
	}
	ctx := context.Background()
	if err := e.svc.CreateAgent(ctx, models.System, a, ""); err != nil {
		e.t.Fatalf("create agent %s: %v", name, err)
	}
	tok, err := e.svc.CreateToken(ctx, models.System, name, "test")
	if err != nil {
		e.t.Fatalf("token for %s: %v", name, err)
	}
	e.tokens[name], e.agents[name] = tok, a
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
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, e.srv.URL+"/api/v1"+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if as != "" {
		req.Header.Set("Authorization", "Bearer "+e.tokens[as])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := resp{Status: res.StatusCode, Raw: raw, Body: map[string]any{}}
	_ = jsonUnmarshal(raw, &r.Body)
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
	evs, err := e.db.ListEvents(context.Background(), 0, 100000)
	if err != nil {
		e.t.Fatal(err)
	}
	return len(evs)
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
