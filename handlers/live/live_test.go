package live

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/models/store/storetest"
)

func TestSessionRequired(t *testing.T) {
	en := newEnv(t, store.DialectSQLite, Options{})
	expired := en.session(en.agent, -time.Minute)
	off := en.human("bob")
	offSecret := en.session(off, time.Hour)
	off.Disabled = true
	if err := en.store.UpdateAgent(context.Background(), off); err != nil {
		t.Fatal(err)
	}
	worker := &models.Agent{Name: "w1", Kind: models.KindWorker, Roles: []string{"developer"}, Command: "true", Concurrency: 1}
	if err := en.store.CreateAgent(context.Background(), worker); err != nil {
		t.Fatal(err)
	}
	workerSecret := en.session(worker, time.Hour)

	for name, secret := range map[string]string{
		"no cookie":       "",
		"wrong secret":    models.NewSecret(""),
		"expired session": expired,
		"disabled agent":  offSecret,
		"worker agent":    workerSecret,
		"oversized":       strings.Repeat("x", 300),
	} {
		c, resp, err := en.dial(secret, "0", nil)
		if err == nil {
			c.Close()
			t.Errorf("%s: connected", name)
			continue
		}
		if resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: got %s, want 401", name, status(resp))
		}
	}
	// A malformed after is refused (with a valid session) before upgrading.
	for _, after := range []string{"abc", "-1", "1.5", "99999999999999999999"} {
		c, resp, err := en.dial(en.cookie, after, nil)
		if err == nil {
			c.Close()
			t.Errorf("after=%s: connected", after)
		} else if resp == nil || resp.StatusCode != http.StatusBadRequest {
			t.Errorf("after=%s: got %s, want 400", after, status(resp))
		}
	}
	// The unauthenticated are told 401 even with a malformed after.
	if _, resp, err := en.dial("", "abc", nil); err == nil || resp == nil || resp.StatusCode != 401 {
		t.Errorf("no cookie, bad after: got %s", status(resp))
	}
	// A plain GET with a session is not a handshake.
	req, _ := http.NewRequest(http.MethodGet, en.srv.URL+"/ws", nil)
	req.Header.Set("Cookie", SessionCookie+"="+en.cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("plain GET: %s, want 400", resp.Status)
	}
	// The valid session connects.
	c := en.mustDial("0")
	c.Close()
}

func TestCrossOriginRefused(t *testing.T) {
	en := newEnv(t, store.DialectSQLite, Options{AllowedOrigins: []string{"https://dash.example.com"}})
	host := strings.TrimPrefix(en.srv.URL, "http://")
	for _, origin := range []string{"http://evil.example", "null", "http://" + host + ".evil.example", "file://" + host} {
		c, resp, err := en.dial(en.cookie, "0", http.Header{"Origin": {origin}})
		if err == nil {
			c.Close()
			t.Errorf("origin %s: connected", origin)
			continue
		}
		if resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("origin %s: got %s, want 403", origin, status(resp))
		}
	}
	for _, origin := range []string{"http://" + host, "HTTP://" + strings.ToUpper(host), "https://dash.example.com"} {
		c, resp, err := en.dial(en.cookie, "0", http.Header{"Origin": {origin}})
		if err != nil {
			t.Errorf("origin %s: %v (%s)", origin, err, status(resp))
			continue
		}
		c.Close()
	}
}

// TestReplay: a client gets exactly the events after its id, in order (paged), then
// the live ones; without after it gets only new events.
func TestReplay(t *testing.T) {
	handlertest.ForEachDialect(t, func(t *testing.T, d string) {
		en := newEnv(t, d, Options{BatchSize: 7})
		base := en.newest()
		ids := en.appendEvents(40)
		waitFor(t, 5*time.Second, "hub to read the events", func() bool {
			en.hub.mu.Lock()
			defer en.hub.mu.Unlock()
			return en.hub.last == ids[len(ids)-1]
		})

		from := en.mustDial(itoa(ids[9]))
		fresh := en.mustDial("")
		all := en.mustDial(itoa(base))
		ahead := en.mustDial(itoa(ids[39] + 3)) // claims ids the hub has not seen yet

		got := readEvents(t, from, ids[39], 5*time.Second)
		if !slices.Equal(got, ids[10:]) {
			t.Fatalf("replay after %d: got %v, want %v", ids[9], got, ids[10:])
		}
		if got := readEvents(t, all, ids[39], 5*time.Second); !slices.Equal(got, ids) {
			t.Fatalf("replay after %d: got %v, want %v", base, got, ids)
		}
		more := en.appendEvents(5)
		if got := readEvents(t, from, more[4], 5*time.Second); !slices.Equal(got, more) {
			t.Fatalf("live after replay: got %v, want %v", got, more)
		}
		if got := readEvents(t, fresh, more[4], 5*time.Second); !slices.Equal(got, more) {
			t.Fatalf("no after: got %v, want only the new %v", got, more)
		}
		if got := readEvents(t, ahead, more[4], 5*time.Second); !slices.Equal(got, more[3:]) {
			t.Fatalf("after beyond the newest: got %v, want %v", got, more[3:])
		}
		expectNothing(t, from, 200*time.Millisecond)
	})
}

// TestReconnectMissesNothing: while another goroutine appends 500 events, a client
// connects, reads a little, disconnects and reconnects with its last id, again and
// again; the union of what it received is every id exactly once, in order.
func TestReconnectMissesNothing(t *testing.T) {
	handlertest.ForEachDialect(t, func(t *testing.T, d string) {
		en := newEnv(t, d, Options{BatchSize: 50})
		base := en.newest()
		const n = 500
		appended := make(chan []int64, 1)
		go func() {
			ids := make([]int64, 0, n)
			for i := range n {
				id, err := en.appendEvent(nil)
				if err != nil {
					t.Errorf("append: %v", err)
					break
				}
				ids = append(ids, id)
				if i%25 == 0 {
					time.Sleep(time.Duration(rand.IntN(8)) * time.Millisecond)
				}
			}
			appended <- ids
		}()

		var got []int64
		last := base
		var want []int64
		conns := 0
		deadline := time.Now().Add(60 * time.Second)
		for want == nil || last < want[len(want)-1] {
			if time.Now().After(deadline) {
				t.Fatalf("timed out after %d connections with last id %d", conns, last)
			}
			select {
			case want = <-appended:
			default:
			}
			after := itoa(last)
			if conns%4 == 3 {
				// Connecting from an older id than the last one seen also works;
				// the client ignores what it already has, like live.js.
				after = itoa(max(base, last-3))
			}
			c, resp, err := en.dial(en.cookie, after, nil)
			if err != nil {
				t.Fatalf("dial: %v (%s)", err, status(resp))
			}
			conns++
			reads := 1 + rand.IntN(6)
			_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			for range reads {
				_, b, err := c.ReadMessage()
				if err != nil {
					break // nothing new within the deadline: reconnect anyway
				}
				for _, it := range parse(t, b) {
					if it.Type == "log" || it.ID <= last {
						continue
					}
					got = append(got, it.ID)
					last = it.ID
				}
			}
			if conns%2 == 0 {
				_ = c.WriteControl(websocket.CloseMessage,
					websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
			}
			c.Close()
		}
		if !slices.Equal(got, want) {
			t.Fatalf("after %d connections: received %d ids, want %d; first difference at %d",
				conns, len(got), len(want), firstDiff(got, want))
		}
		if conns < 5 {
			t.Fatalf("only %d connections; the test did not exercise reconnects", conns)
		}
		t.Logf("%d events over %d connections, none missed or repeated", len(got), conns)
	})
}

// TestReplayHandoverDuplicates checks the raw stream of one connection (no client-side
// filtering) while events are appended concurrently: strictly increasing, contiguous.
func TestReplayHandoverDuplicates(t *testing.T) {
	handlertest.ForEachDialect(t, func(t *testing.T, d string) {
		en := newEnv(t, d, Options{BatchSize: 20})
		base := en.newest()
		en.appendEvents(60)
		done := make(chan []int64, 1)
		go func() {
			ids := make([]int64, 0, 200)
			for range 200 {
				id, err := en.appendEvent(nil)
				if err != nil {
					t.Errorf("append: %v", err)
					break
				}
				ids = append(ids, id)
			}
			done <- ids
		}()
		var conns []*websocket.Conn
		for i := range 8 {
			time.Sleep(time.Duration(i) * 3 * time.Millisecond)
			conns = append(conns, en.mustDial(itoa(base)))
		}
		ids := <-done
		lastID := ids[len(ids)-1]
		for i, c := range conns {
			got := readEvents(t, c, lastID, 20*time.Second)
			for j := 1; j < len(got); j++ {
				if got[j] != got[j-1]+1 {
					t.Fatalf("conn %d: %d followed by %d", i, got[j-1], got[j])
				}
			}
			if got[0] != base+1 || got[len(got)-1] != lastID {
				t.Fatalf("conn %d: got %d..%d, want %d..%d", i, got[0], got[len(got)-1], base+1, lastID)
			}
		}
	})
}

// TestSlowClientDropped: a client that never reads is dropped with its queue full,
// while a fast one receives every event.
func TestSlowClientDropped(t *testing.T) {
	// One event per message so that the queue counts events; events are appended at
	// a pace a reading client keeps up with, far faster than one that never reads.
	en := newEnv(t, store.DialectSQLite, Options{QueueSize: 64, BatchSize: 1})
	base := en.newest()
	slow := en.mustDial(itoa(base))
	fast := en.mustDial(itoa(base))
	waitFor(t, 5*time.Second, "two clients", func() bool { return en.hub.Clients() == 2 })

	big := []byte(`{"pad":"` + strings.Repeat("x", 32<<10) + `"}`)
	const n = 400 // ~13 MB to each client: more than the socket buffers hold
	want := make([]int64, 0, n)
	var wg sync.WaitGroup
	var got []int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ids []int64
		_ = fast.SetReadDeadline(time.Now().Add(60 * time.Second))
		for {
			_, b, err := fast.ReadMessage()
			if err != nil {
				t.Errorf("fast client: %v", err)
				return
			}
			for _, it := range parse(t, b) {
				ids = append(ids, it.ID)
			}
			if len(ids) == n {
				got = ids
				return
			}
		}
	}()
	for range n {
		id, err := en.appendEvent(big)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
		time.Sleep(time.Millisecond)
	}
	waitFor(t, 30*time.Second, "the slow client to be dropped", func() bool { return en.hub.Clients() == 1 })
	wg.Wait()
	if !slices.Equal(got, want) {
		t.Fatalf("fast client got %d events (first difference at %d), want %d", len(got), firstDiff(got, want), n)
	}
	// The slow client's stream ends: after what was buffered, the connection is closed.
	_ = slow.SetReadDeadline(time.Now().Add(30 * time.Second))
	var readErr error
	for readErr == nil {
		_, _, readErr = slow.ReadMessage()
	}
	var ne net.Error
	if errors.As(readErr, &ne) && ne.Timeout() {
		t.Fatalf("slow client: connection still open: %v", readErr)
	}
	t.Logf("slow client ended with: %v", readErr)
	// The fast client is still served.
	id, _ := en.appendEvent(nil)
	if got := readEvents(t, fast, id, 5*time.Second); !slices.Equal(got, []int64{id}) {
		t.Fatalf("after the drop: got %v, want [%d]", got, id)
	}
}

func TestStopClosesEverything(t *testing.T) {
	en := newEnv(t, store.DialectSQLite, Options{})
	var conns []*websocket.Conn
	for range 3 {
		conns = append(conns, en.mustDial(""))
	}
	waitFor(t, 5*time.Second, "three clients", func() bool { return en.hub.Clients() == 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := en.hub.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if n := en.hub.Clients(); n != 0 {
		t.Fatalf("%d clients after Stop", n)
	}
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _, err := c.ReadMessage()
		if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
			t.Errorf("conn %d: got %v, want close 1001", i, err)
		}
	}
	if err := en.hub.Stop(ctx); err != nil {
		t.Fatalf("second stop: %v", err)
	}
	if err := en.hub.Start(ctx); err == nil {
		t.Fatal("a stopped hub started again")
	}
	_, resp, err := en.dial(en.cookie, "", nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial after stop: %v %s, want 503", err, status(resp))
	}
	// PublishLog after Stop is harmless.
	en.hub.PublishLog(1, []byte("late"))
}

func TestStopWithoutStart(t *testing.T) {
	h := New(storetest.Open(t, store.DialectSQLite), nil, Options{})
	for range 2 {
		if err := h.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStopBeforeStart: a hub stopped before it started never starts.
func TestStopBeforeStart(t *testing.T) {
	h := New(storetest.Open(t, store.DialectSQLite), nil, Options{})
	_ = h.Stop(context.Background())
	if err := h.Start(context.Background()); err == nil {
		_ = h.Stop(context.Background())
		t.Fatal("a hub stopped before Start started")
	}
}

func TestLogChunks(t *testing.T) {
	en := newEnv(t, store.DialectSQLite, Options{LogFlush: 50 * time.Millisecond})
	c := en.mustDial("")
	waitFor(t, 5*time.Second, "the client", func() bool { return en.hub.Clients() == 1 })

	// 200 small writes to task 12 and a few to task 13, a character split across two.
	var want strings.Builder
	for i := range 200 {
		s := "line " + itoa(int64(i)) + "\n"
		want.WriteString(s)
		en.hub.PublishLog(12, []byte(s))
	}
	e := []byte("é…")
	en.hub.PublishLog(13, e[:1])
	en.hub.PublishLog(13, e[1:4])
	time.Sleep(120 * time.Millisecond)
	en.hub.PublishLog(13, e[4:])
	want.WriteString("done")
	en.hub.PublishLog(12, []byte("done"))

	logs := map[int64]*strings.Builder{12: {}, 13: {}}
	messages := 0
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for logs[12].String() != want.String() || logs[13].String() != "é…" {
		_, b, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("read: %v; task 12 so far %q, task 13 %q", err, tail(logs[12].String()), logs[13].String())
		}
		messages++
		for _, it := range parse(t, b) {
			if it.Type != "log" || it.TaskID == nil || it.ID != 0 {
				t.Fatalf("not a log chunk: %s", b)
			}
			logs[*it.TaskID].WriteString(it.Chunk)
		}
	}
	if messages > 10 {
		t.Errorf("%d messages for 204 chunks: not coalesced", messages)
	}
	t.Logf("204 chunks arrived in %d messages", messages)
}

func TestLogBounded(t *testing.T) {
	en := newEnv(t, store.DialectSQLite, Options{LogFlush: 200 * time.Millisecond, LogMaxPending: 1000})
	c := en.mustDial("")
	waitFor(t, 5*time.Second, "the client", func() bool { return en.hub.Clients() == 1 })
	en.hub.PublishLog(5, []byte("a")) // flushed at once; the rest waits for the interval
	for range 100 {
		en.hub.PublishLog(5, []byte(strings.Repeat("b", 100)))
	}
	// Read until the stream has been quiet for a while.
	var all strings.Builder
	for {
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		_, b, err := c.ReadMessage()
		if err != nil {
			break
		}
		for _, it := range parse(t, b) {
			all.WriteString(it.Chunk)
		}
	}
	// 10,001 bytes were written; what was buffered (at most 1,000 bytes per flush) and
	// what the markers say was dropped add up.
	s := all.String()
	dropped := 0
	marker := regexp.MustCompile(`\n\[… (\d+) bytes of output dropped …\]\n`)
	for _, m := range marker.FindAllStringSubmatch(s, -1) {
		n, _ := strconv.Atoi(m[1])
		dropped += n
	}
	kept := len(marker.ReplaceAllString(s, ""))
	if dropped == 0 || kept+dropped != 10001 || kept > 3000 {
		t.Fatalf("bounded log: kept %d, dropped %d of 10001: %q", kept, dropped, tail(s))
	}
	t.Logf("kept %d bytes, dropped %d", kept, dropped)
}

func TestSessionExpiryEndsStream(t *testing.T) {
	en := newEnv(t, store.DialectSQLite, Options{SessionCheck: 100 * time.Millisecond})
	short := en.session(en.agent, 1500*time.Millisecond)
	c, resp, err := en.dial(short, "", nil)
	if err != nil {
		t.Fatalf("dial: %v (%s)", err, status(resp))
	}
	defer c.Close()
	other := en.session(en.agent, time.Hour)
	c2, resp, err := en.dial(other, "", nil)
	if err != nil {
		t.Fatalf("dial: %v (%s)", err, status(resp))
	}
	defer c2.Close()
	// A logout (session deleted) ends the stream at the next check.
	if err := en.store.DeleteSession(context.Background(), models.HashSecret(other)); err != nil {
		t.Fatal(err)
	}
	for i, conn := range []*websocket.Conn{c, c2} {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _, err = conn.ReadMessage()
		if !websocket.IsCloseError(err, websocket.ClosePolicyViolation) {
			t.Fatalf("conn %d: got %v, want close 1008", i, err)
		}
	}
}

// TestPingKeepsIdleClients: pings go out and a client that answers them stays.
func TestPingKeepsIdleClients(t *testing.T) {
	en := newEnv(t, store.DialectSQLite, Options{PongWait: 500 * time.Millisecond})
	c := en.mustDial("")
	pings := make(chan struct{}, 16)
	c.SetPingHandler(func(data string) error {
		select {
		case pings <- struct{}{}:
		default:
		}
		return c.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	go func() {
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
		}
	}()
	time.Sleep(1500 * time.Millisecond) // three PongWaits
	if len(pings) < 3 {
		t.Fatalf("%d pings in 1.5 s", len(pings))
	}
	if n := en.hub.Clients(); n != 1 {
		t.Fatalf("an answering client was dropped (%d clients)", n)
	}
	// A client that never reads never answers pings: it is dropped after PongWait.
	en.mustDial("")
	waitFor(t, 3*time.Second, "two clients", func() bool { return en.hub.Clients() == 2 })
	waitFor(t, 3*time.Second, "the silent client to be dropped", func() bool { return en.hub.Clients() == 1 })
}

// fakeEvents answers ListEvents from a sorted id list with gaps.
type fakeEvents struct {
	models.Store
	ids []int64
}

func (f fakeEvents) ListEvents(_ context.Context, after int64, limit int) ([]models.Event, error) {
	var out []models.Event
	for _, id := range f.ids {
		if id > after && len(out) < limit {
			out = append(out, models.Event{ID: id})
		}
	}
	return out, nil
}

func TestNewestEventID(t *testing.T) {
	cases := [][]int64{nil, {1}, {5}, {1, 2, 3}, {3, 9, 10, 11, 64, 65, 1000}, {2, 4, 1 << 40}}
	for _, ids := range cases {
		got, err := newestEventID(context.Background(), fakeEvents{ids: ids})
		want := int64(0)
		if len(ids) > 0 {
			want = ids[len(ids)-1]
		}
		if err != nil || got != want {
			t.Errorf("%v: got %d, %v; want %d", ids, got, err, want)
		}
	}
}

func TestIncompleteTail(t *testing.T) {
	e := []byte("aé€😀")
	for _, c := range []struct {
		b    []byte
		want int
	}{{nil, 0}, {[]byte("abc"), 0}, {e, 0}, {e[:2], 1}, {e[:3], 0}, {e[:4], 1}, {e[:5], 2}, {e[:7], 1}, {e[:9], 3}, {[]byte{0xff}, 0}} {
		if got := incompleteTail(c.b); got != c.want {
			t.Errorf("%q: got %d, want %d", c.b, got, c.want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func firstDiff(a, b []int64) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func tail(s string) string {
	if len(s) > 200 {
		return "…" + s[len(s)-200:]
	}
	return s
}
