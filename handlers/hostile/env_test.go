// Package hostile_test sends generated hostile requests to the whole server (JSON
// API, pages and forms, /ws, /mcp, webhooks pages, /metrics, static files) as an
// anonymous client, a worker's token, an attempt token and an admin, on SQLite and
// PostgreSQL, and checks that nothing answers 5xx, that every refusal is in the
// product's error shape, and that the database holds nothing a refused request
// carried (issue 37).
package hostile_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/glebarez/go-sqlite"  // database/sql driver "sqlite", to read the test database back
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/handlers/live"
	mcpserver "github.com/countersign/countersign/handlers/mcp"
	"github.com/countersign/countersign/handlers/pages"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/models/store/storetest"
	"github.com/countersign/countersign/runner/ledger"
)

// adminPassword is the admin's dashboard password.
const adminPassword = "correct horse battery"

// identity is who a request is sent as.
type identity struct {
	name   string
	bearer string // API, /mcp and /metrics token; "" for none
	cookie string // dashboard session secret; "" for none
	csrf   string // the session's CSRF token
}

// env is the whole server over a fresh database, with a log that counts errors.
type env struct {
	t       *testing.T
	dialect string
	cfg     store.Config
	db      *store.DB
	svc     *models.Service
	echo    *echo.Echo
	srv     *httptest.Server
	errs    *errorCounter
	ids     []identity
	goalID  int64
	taskID  int64
}

// errorCounter is a slog handler that keeps every record at level Error or above: a
// server error (500) or a failure logged on the way is one.
type errorCounter struct {
	mu   sync.Mutex
	msgs []string
}

func (h *errorCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (h *errorCounter) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	h.mu.Lock()
	h.msgs = append(h.msgs, b.String())
	h.mu.Unlock()
	return nil
}
func (h *errorCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *errorCounter) WithGroup(string) slog.Handler      { return h }

func (h *errorCounter) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.msgs
	h.msgs = nil
	return m
}

// newEnv serves everything cmd/countersign serves (API, metrics behind a token,
// pages, the live hub, MCP) over a fresh database of dialect, with four identities.
func newEnv(t *testing.T, dialect string) *env {
	t.Helper()
	cfg := storetest.Config(t, dialect)
	db, err := store.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc := models.NewService(db, ledger.Composer{})
	errs := &errorCounter{}
	log := slog.New(errs)
	hub := live.New(db, log, live.Options{})
	if err := hub.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hub.Stop(context.Background()) })
	dash := pages.New(pages.Deps{Service: svc, Log: log, Version: "test"})
	mcpH := mcpserver.New(svc, log, "test")
	e := handlers.NewServer(handlers.Deps{Service: svc, Log: log, Version: "test", HTML: dash.ErrorPage,
		Metrics: handlers.NewMetrics(db, hub.Clients).Handler(),
		Extra:   []func(*echo.Echo){dash.Routes, hub.Register, func(e *echo.Echo) { mcpserver.Register(e, mcpH) }}})
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	en := &env{t: t, dialect: dialect, cfg: cfg, db: db, svc: svc, echo: e, srv: srv, errs: errs}
	en.identities()
	return en
}

// identities makes the anonymous client, a worker with a token, an attempt token of
// that worker for a task, and an admin with a token and a dashboard session; and the
// goal and task the generated paths name.
func (e *env) identities() {
	ctx := context.Background()
	admin := handlertest.CreateAgent(e.t, e.svc, "root", models.KindHuman, adminPassword, models.RoleAdmin, models.RoleLead, "developer")
	worker := handlertest.CreateAgent(e.t, e.svc, "bot", models.KindWorker, "", "developer")
	g := &models.Goal{Title: "seed goal"}
	if err := e.svc.Goals.CreateGoal(ctx, admin, g); err != nil {
		e.t.Fatal(err)
	}
	task, err := e.svc.Tasks.CreateTask(ctx, admin, models.TaskSpec{Title: "seed task", GoalID: &g.ID, Assignee: "bot"})
	if err != nil {
		e.t.Fatal(err)
	}
	e.goalID, e.taskID = g.ID, task.ID
	tpl, err := models.ParseTemplate([]byte("name: seed\nsteps:\n  - role: developer\n    brief: b\n"))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.svc.Templates.SaveTemplate(ctx, admin, tpl); err != nil {
		e.t.Fatal(err)
	}
	attempt, _, err := e.svc.Tokens.IssueAttemptToken(ctx, worker.ID, task.ID, 1, time.Hour)
	if err != nil {
		e.t.Fatal(err)
	}
	secret := models.NewSecret("")
	sess := &models.Session{ID: models.HashSecret(secret), AgentID: admin.ID, CSRF: models.NewSecret(""),
		CreatedAt: time.Now().Add(-time.Minute), ExpiresAt: time.Now().Add(time.Hour)}
	if err := db(e).CreateSession(ctx, sess); err != nil {
		e.t.Fatal(err)
	}
	e.ids = []identity{
		{name: "anonymous"},
		{name: "worker", bearer: handlertest.CreateToken(e.t, e.svc, "bot", "hostile")},
		{name: "attempt", bearer: attempt},
		{name: "admin", bearer: handlertest.CreateToken(e.t, e.svc, "root", "hostile"), cookie: secret, csrf: sess.CSRF},
	}
}

func db(e *env) models.Store { return e.db }

// dump is every text the database holds, every column of every row of every table,
// to look for what refused requests carried.
func (e *env) dump() string {
	e.t.Helper()
	driver, dsn := "sqlite", e.cfg.SQLitePath
	list := `SELECT name FROM sqlite_master WHERE type = 'table'`
	if e.dialect == store.DialectPostgres {
		driver, dsn = "pgx", e.cfg.DatabaseURL
		list = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`
	}
	conn, err := sql.Open(driver, dsn)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close()
	var tables []string
	rows, err := conn.Query(list)
	if err != nil {
		e.t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			e.t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	var b strings.Builder
	for _, tb := range tables {
		dumpTable(e.t, conn, tb, &b)
	}
	return b.String()
}

// dumpTable writes every value of every row of table to b.
func dumpTable(t *testing.T, conn *sql.DB, table string, b *strings.Builder) {
	t.Helper()
	rows, err := conn.Query(`SELECT * FROM "` + table + `"`)
	if err != nil {
		t.Fatalf("dump %s: %v", table, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("dump %s: %v", table, err)
		}
		for _, v := range vals {
			switch v := v.(type) {
			case []byte:
				b.Write(v)
			case string:
				b.WriteString(v)
			default:
				fmt.Fprint(b, v)
			}
			b.WriteByte('\n')
		}
	}
}
