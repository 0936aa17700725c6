package live

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/countersign/countersign/models/store"
)

// BenchmarkFanout1000 measures the time from appending one event to the store until
// every one of 1,000 WebSocket clients (real TCP on 127.0.0.1, one reading goroutine
// each, the dashboard's session and handshake) has received it. Each iteration is one
// round; it reports the p50, p99 and maximum over the rounds (target p99 < 100 ms).
//
//	go test -run '^$' -bench Fanout1000 -benchtime 50x ./handlers/live/
func BenchmarkFanout1000(b *testing.B) {
	const clients = 1000
	raiseFileLimit(b, 2*clients+256)
	en := newEnv(b, store.DialectSQLite, Options{})

	var (
		target  atomic.Int64 // the event id of the current round
		arrived atomic.Int64
		doneMu  sync.Mutex
		done    chan struct{}
	)
	reader := func(c *websocket.Conn) {
		var ev struct {
			ID int64 `json:"id"`
		}
		for {
			_, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if json.Unmarshal(msg, &ev) != nil || ev.ID != target.Load() {
				continue
			}
			if arrived.Add(1) == clients {
				doneMu.Lock()
				close(done)
				doneMu.Unlock()
			}
		}
	}

	conns := dialClients(b, en, clients)
	for _, c := range conns {
		go reader(c)
	}
	b.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	waitFor(b, 10*time.Second, "1,000 registered clients", func() bool { return en.hub.Clients() == clients })

	lat := make([]time.Duration, 0, b.N)
	appendLat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		doneMu.Lock()
		done = make(chan struct{})
		round := done
		doneMu.Unlock()
		arrived.Store(0)
		// The id is not known before the append commits; the next one is last+1
		// because ids are sequential in a fresh SQLite database with one writer.
		target.Store(en.newestNoFail() + 1)
		start := time.Now()
		id, err := en.appendEvent(nil)
		if err != nil {
			b.Fatal(err)
		}
		appendLat = append(appendLat, time.Since(start))
		if id != target.Load() {
			b.Fatalf("appended id %d, expected %d", id, target.Load())
		}
		select {
		case <-round:
		case <-time.After(10 * time.Second):
			b.Fatalf("round %d: only %d of %d clients received event %d", i, arrived.Load(), clients, id)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	reportLatencies(b, lat, appendLat)
}

// dialClients connects n clients with en's session, 50 handshakes at a time.
func dialClients(b *testing.B, en *env, n int) []*websocket.Conn {
	b.Helper()
	// Connect 1,000 clients, 50 handshakes at a time.
	hdr := http.Header{"Cookie": {SessionCookie + "=" + en.cookie}}
	conns := make([]*websocket.Conn, n)
	sem := make(chan struct{}, 50)
	var wg sync.WaitGroup
	var dialErr atomic.Value
	for i := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, _, err := websocket.DefaultDialer.Dial(en.wsURL, hdr)
			if err != nil {
				dialErr.Store(err)
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	if err, _ := dialErr.Load().(error); err != nil {
		b.Fatalf("dial: %v", err)
	}
	return conns
}

// reportLatencies reports the percentiles of the rounds' latencies and of the appends'.
func reportLatencies(b *testing.B, lat, appendLat []time.Duration) {
	b.Helper()
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(percentile(lat, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 99)), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
	slices.Sort(appendLat)
	// How much of it is the store's commit rather than the fan-out.
	b.ReportMetric(ms(percentile(appendLat, 50)), "append-p50-ms")
	b.ReportMetric(ms(percentile(appendLat, 99)), "append-p99-ms")
}

// percentile returns the p-th percentile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	k := (p*len(sorted) + 99) / 100
	return sorted[max(k-1, 0)]
}

// newestNoFail is newest for a benchmark loop.
func (en *env) newestNoFail() int64 {
	en.hub.mu.Lock()
	defer en.hub.mu.Unlock()
	return en.hub.last
}

// raiseFileLimit makes room for n open files or skips the benchmark.
func raiseFileLimit(b *testing.B, n uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Skipf("getrlimit: %v", err)
	}
	if lim.Cur >= n {
		return
	}
	lim.Cur = min(n, lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < n {
		b.Skip(fmt.Sprintf("need %d open files, the limit is %d (%v)", n, lim.Cur, err))
	}
}
