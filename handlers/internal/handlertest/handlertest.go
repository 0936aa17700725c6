// Package handlertest is the harness the handlers test packages share (handlers,
// handlers/pages, handlers/mcp, handlers/live): a store and service per dialect, the
// HTTP app on a test server, agents with tokens or sessions, event counts and plain
// HTTP requests. Each package keeps its own env type and test-facing methods on top.
//
// It must not import handlers/live or handlers/pages: live's tests are in-package and
// would form an import cycle.
package handlertest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/models/store/storetest"
	"github.com/countersign/countersign/runner/ledger"
)

// ForEachDialect runs f as a subtest named after each dialect of
// storetest.Dialects (SQLite, then PostgreSQL), so every handler test covers both.
func ForEachDialect(t *testing.T, f func(t *testing.T, dialect string)) {
	t.Helper()
	for _, d := range storetest.Dialects() {
		t.Run(d, func(t *testing.T) { f(t, d) })
	}
}

// DiscardLog is a logger that writes nothing: the servers under test log every
// request, which would bury the test output.
func DiscardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// NewService returns the service the server runs on over db, with the composed
// (local hash chain) ledger, as cmd/countersign builds it.
func NewService(db models.Store) *models.Service { return models.NewService(db, ledger.Composer{}) }

// Open returns a fresh, migrated database of dialect (removed when the test ends)
// and a service over it (see NewService).
func Open(t testing.TB, dialect string) (*store.DB, *models.Service) {
	t.Helper()
	db := storetest.Open(t, dialect)
	return db, NewService(db)
}

// Serve builds the app with handlers.NewServer from d (Log defaults to DiscardLog,
// Version to "test") and serves it on a test HTTP server that is closed when the test
// ends. It returns the app and the server.
func Serve(t testing.TB, d handlers.Deps) (*echo.Echo, *httptest.Server) {
	t.Helper()
	if d.Log == nil {
		d.Log = DiscardLog()
	}
	if d.Version == "" {
		d.Version = "test"
	}
	e := handlers.NewServer(d)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return e, srv
}

// CreateAgent creates an agent named name of kind with roles through the service, as
// the system, with password ("" for none); a worker gets the command "true". Any
// error fails the test.
func CreateAgent(t testing.TB, svc *models.Service, name string, kind models.AgentKind, password string, roles ...string) *models.Agent {
	t.Helper()
	a := &models.Agent{Name: name, Kind: kind, Roles: roles}
	if kind == models.KindWorker {
		a.Command = "true"
	}
	if err := svc.Agents.CreateAgent(context.Background(), models.System, a, password); err != nil {
		t.Fatalf("create agent %s: %v", name, err)
	}
	return a
}

// CreateToken issues a bearer token called label for the agent name, as the system,
// and returns its secret. Any error fails the test.
func CreateToken(t testing.TB, svc *models.Service, name, label string) string {
	t.Helper()
	tok, err := svc.Tokens.CreateToken(context.Background(), models.System, name, label)
	if err != nil {
		t.Fatalf("token for %s: %v", name, err)
	}
	return tok
}

// Session stores a dashboard session of a, created two hours ago and valid for ttl
// from now (negative: already expired), and returns the secret its cookie carries.
// Any error fails the test.
func Session(t testing.TB, st models.Store, a *models.Agent, ttl time.Duration) string {
	t.Helper()
	secret := models.NewSecret("")
	s := &models.Session{ID: models.HashSecret(secret), AgentID: a.ID, CSRF: models.NewSecret(""),
		CreatedAt: time.Now().Add(-2 * time.Hour), ExpiresAt: time.Now().Add(ttl)}
	if err := st.CreateSession(context.Background(), s); err != nil {
		t.Fatalf("create session: %v", err)
	}
	return secret
}

// Events returns every stored event, oldest first, reading them page by page. Any
// error fails the test.
func Events(t testing.TB, st models.Store) []models.Event {
	t.Helper()
	var all []models.Event
	after := int64(0)
	for {
		evs, err := st.ListEvents(context.Background(), after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			return all
		}
		all = append(all, evs...)
		after = evs[len(evs)-1].ID
	}
}

// EventCount is the number of stored events: tests compare it before and after a
// refused request, which must change nothing.
func EventCount(t testing.TB, st models.Store) int {
	t.Helper()
	return len(Events(t, st))
}

// Body makes a request body of b: nil is none, a string is sent as it is, anything
// else is encoded as JSON.
func Body(b any) io.Reader {
	switch b := b.(type) {
	case nil:
		return nil
	case string:
		return strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		return strings.NewReader(string(j))
	}
}

// Request sends method url with body as Content-Type ctype and, unless token is "",
// an Authorization bearer token, through http.DefaultClient. It returns the status
// and the whole response body; an error sending the request fails the test.
func Request(t testing.TB, method, url, token, ctype string, body io.Reader) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	req.Header.Set("Content-Type", ctype)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, raw
}
