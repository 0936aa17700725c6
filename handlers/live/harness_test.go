package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store/storetest"
)

// env is a running hub behind a real HTTP server on a real store.
type env struct {
	t      testing.TB
	store  models.Store
	hub    *Hub
	srv    *httptest.Server
	wsURL  string
	cookie string // a valid session secret
	agent  *models.Agent
	names  atomic.Int64
}

func newEnv(t testing.TB, dialect string, opts Options) *env {
	t.Helper()
	st := storetest.Open(t, dialect)
	return newEnvOn(t, st, opts)
}

func newEnvOn(t testing.TB, st models.Store, opts Options) *env {
	t.Helper()
	log := handlertest.DiscardLog()
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	h := New(st, log, opts)
	ctx := context.Background()
	if err := h.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = handlers.NewErrorHandler(log, nil).Handle
	h.Register(e)
	srv := httptest.NewServer(e)
	en := &env{t: t, store: st, hub: h, srv: srv, wsURL: "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Stop(sctx); err != nil {
			t.Errorf("stop: %v", err)
		}
		srv.Close()
	})
	en.agent = en.human("alice")
	en.cookie = en.session(en.agent, time.Hour)
	return en
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// human creates a human agent that may sign in.
func (en *env) human(name string) *models.Agent {
	en.t.Helper()
	a := &models.Agent{Name: name, Kind: models.KindHuman, Roles: []string{"exec"}, Concurrency: 1}
	if err := en.store.CreateAgent(context.Background(), a); err != nil {
		en.t.Fatalf("create agent: %v", err)
	}
	return a
}

// session stores a session of a valid for ttl (negative: already expired) and
// returns its cookie secret.
func (en *env) session(a *models.Agent, ttl time.Duration) string {
	en.t.Helper()
	return handlertest.Session(en.t, en.store, a, ttl)
}

// dial connects with the cookie secret (none when ""), after ("" = no parameter) and
// extra headers.
func (en *env) dial(secret, after string, hdr http.Header) (*websocket.Conn, *http.Response, error) {
	u := en.wsURL
	if after != "" {
		u += "?after=" + after
	}
	if hdr == nil {
		hdr = http.Header{}
	}
	if secret != "" {
		hdr.Set("Cookie", SessionCookie+"="+secret)
	}
	return websocket.DefaultDialer.Dial(u, hdr)
}

// mustDial connects with the env's session or fails the test.
func (en *env) mustDial(after string) *websocket.Conn {
	en.t.Helper()
	c, resp, err := en.dial(en.cookie, after, nil)
	if err != nil {
		en.t.Fatalf("dial: %v (%s)", err, status(resp))
	}
	en.t.Cleanup(func() { c.Close() })
	return c
}

func status(r *http.Response) string {
	if r == nil {
		return "no response"
	}
	return r.Status
}

// appendEvents appends n events and returns their ids.
func (en *env) appendEvents(n int) []int64 {
	en.t.Helper()
	ids := make([]int64, 0, n)
	for range n {
		id, err := en.appendEvent(nil)
		if err != nil {
			en.t.Fatalf("append: %v", err)
		}
		ids = append(ids, id)
	}
	return ids
}

func (en *env) appendEvent(data []byte) (int64, error) {
	if data == nil {
		data = []byte(`{"n":` + fmt.Sprint(en.names.Add(1)) + `}`)
	}
	task := int64(7)
	e := &models.Event{Type: "test.event", TaskID: &task, Data: data}
	err := en.store.AppendEvent(context.Background(), e)
	return e.ID, err
}

// newest returns the largest event id in the store.
func (en *env) newest() int64 {
	en.t.Helper()
	id, err := newestEventID(context.Background(), en.store)
	if err != nil {
		en.t.Fatal(err)
	}
	return id
}

// item is what a client can receive: an event or a log chunk.
type item struct {
	ID     int64           `json:"id"`
	Type   string          `json:"type"`
	TaskID *int64          `json:"task_id"`
	Chunk  string          `json:"chunk"`
	Data   json.RawMessage `json:"data"`
}

// parse reads one message: an object or an array of them.
func parse(t testing.TB, b []byte) []item {
	t.Helper()
	var list []item
	if len(b) > 0 && b[0] == '[' {
		if err := json.Unmarshal(b, &list); err != nil {
			t.Fatalf("bad message %q: %v", b, err)
		}
		return list
	}
	var one item
	if err := json.Unmarshal(b, &one); err != nil {
		t.Fatalf("bad message %q: %v", b, err)
	}
	return []item{one}
}

// readEvents reads until the ids up to want arrived (or the deadline) and returns the
// event ids received, in order.
func readEvents(t testing.TB, c *websocket.Conn, want int64, within time.Duration) []int64 {
	t.Helper()
	var ids []int64
	_ = c.SetReadDeadline(time.Now().Add(within))
	for len(ids) == 0 || ids[len(ids)-1] < want {
		_, b, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("read (have %d ids, last %v, want up to %d): %v", len(ids), lastOf(ids), want, err)
		}
		for _, it := range parse(t, b) {
			if it.Type != "log" {
				ids = append(ids, it.ID)
			}
		}
	}
	return ids
}

func lastOf(ids []int64) any {
	if len(ids) == 0 {
		return "none"
	}
	return ids[len(ids)-1]
}

// expectNothing asserts that no event arrives within d.
func expectNothing(t testing.TB, c *websocket.Conn, d time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, b, err := c.ReadMessage()
	if err == nil {
		t.Fatalf("unexpected message %s", b)
	}
	var ne interface{ Timeout() bool }
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("expected a timeout, got %v", err)
	}
}

// waitFor polls cond until it holds or fails the test after d.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
