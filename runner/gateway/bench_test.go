package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// The gateway's cost, each figure against the real alternative in the same run:
// calling the same scripted upstream directly. Run with
//
//	go test -run '^$' -bench AddedLatency -benchtime 2000x ./runner/gateway/
//	go test -run '^$' -bench 'StreamThroughput/flat-out' -benchtime 200x ./runner/gateway/
//	go test -run '^$' -bench 'StreamThroughput/paced-1ms' -benchtime 20x ./runner/gateway/
//	go test -run '^$' -bench 'OpenStreams/direct' -benchtime 1x ./runner/gateway/
//	go test -run '^$' -bench 'OpenStreams/gateway' -benchtime 1x ./runner/gateway/

// benchClient keeps connections alive, as a worker's SDK does.
func benchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
}

// post sends body to url with cred and drains the answer.
func post(b *testing.B, c *http.Client, url, cred string, body []byte) {
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("x-api-key", cred)
	req.Header.Set("anthropic-version", "2023-06-01")
	res, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		b.Fatalf("status %d", res.StatusCode)
	}
}

// messageBody is a Messages request of about size bytes.
func messageBody(size int, stream bool) []byte {
	raw, _ := json.Marshal(map[string]any{"model": sonnet, "max_tokens": 1024, "stream": stream,
		"messages": []any{map[string]any{"role": "user", "content": strings.Repeat("a", size)}}})
	return raw
}

// BenchmarkAddedLatency: one non-streamed Messages call at a time, alternating
// direct and through the gateway (metered, capped); reports each side's p50 and p99
// and the gateway's added p50 and p99 in microseconds, for a small request and for
// a 100 KB one (the size of a coding agent's turn).
func BenchmarkAddedLatency(b *testing.B) {
	for _, size := range []int{200, 100 << 10} {
		b.Run(map[int]string{200: "200B", 100 << 10: "100KB"}[size], func(b *testing.B) {
			up := newScripted(b, script{In: 100, Out: 20})
			gw, base := serve(b, up.config())
			l := gw.Issue(Grant{Caps: []Cap{{Key: "goal:1", RemainingUSD: 1e9}}})
			body := messageBody(size, false)
			c := benchClient()
			direct, through := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
			post(b, c, up.srv.URL+"/v1/messages", realKey, body) // warm both connections
			post(b, c, base+"/v1/messages", l.Credential(), body)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				post(b, c, up.srv.URL+"/v1/messages", realKey, body)
				t1 := time.Now()
				post(b, c, base+"/v1/messages", l.Credential(), body)
				direct, through = append(direct, t1.Sub(t0)), append(through, time.Since(t1))
			}
			b.StopTimer()
			d50, d99 := percentiles(direct)
			g50, g99 := percentiles(through)
			b.ReportMetric(us(d50), "direct-p50-µs")
			b.ReportMetric(us(d99), "direct-p99-µs")
			b.ReportMetric(us(g50), "gateway-p50-µs")
			b.ReportMetric(us(g99), "gateway-p99-µs")
			b.ReportMetric(us(g50-d50), "added-p50-µs")
			b.ReportMetric(us(g99-d99), "added-p99-µs")
			if m := l.Revoke(); m.Calls != b.N+1 {
				b.Fatalf("metered %d calls", m.Calls)
			}
		})
	}
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// percentiles is the p50 and p99 of ds.
func percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], ds[len(ds)*99/100]
}

// BenchmarkStreamThroughput: a streamed Messages call, direct and through the
// gateway in turn; reports each side's MB/s and the ratio gateway/direct.
// "flat-out": 2,000 text deltas written as fast as the upstream can (each flushed
// on its own), a stress test in which the gateway's CPU competes with the
// in-process upstream's. "paced-1ms": 200 deltas a millisecond apart, still faster
// than any model writes tokens, the case a worker meets.
func BenchmarkStreamThroughput(b *testing.B) {
	for _, c := range []struct {
		name   string
		chunks int
		pace   time.Duration
	}{{"flat-out", 2000, 0}, {"paced-1ms", 200, time.Millisecond}} {
		b.Run(c.name, func(b *testing.B) { streamThroughput(b, c.chunks, c.pace) })
	}
}

func streamThroughput(b *testing.B, chunks int, pace time.Duration) {
	up := newScripted(b, script{In: 100, Out: int64(chunks), Chunks: chunks})
	up.pace = pace
	gw, base := serve(b, up.config())
	l := gw.Issue(Grant{})
	body := messageBody(200, true)
	c := benchClient()
	var direct, through time.Duration
	var size int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		size = streamOnce(b, c, up.srv.URL, realKey, body)
		t1 := time.Now()
		streamOnce(b, c, base, l.Credential(), body)
		direct, through = direct+t1.Sub(t0), through+time.Since(t1)
	}
	b.StopTimer()
	mb := float64(size) * float64(b.N) / 1e6
	b.ReportMetric(mb/direct.Seconds(), "direct-MB/s")
	b.ReportMetric(mb/through.Seconds(), "gateway-MB/s")
	b.ReportMetric(direct.Seconds()/through.Seconds(), "gateway/direct")
	if u := l.Revoke().Models[sonnet]; u.Calls != b.N || u.Estimated != 0 {
		b.Fatalf("metered %+v", u)
	}
}

// streamOnce reads one stream whole and returns its size.
func streamOnce(b *testing.B, c *http.Client, base, cred string, body []byte) int64 {
	req, _ := http.NewRequest("POST", base+"/v1/messages", bytes.NewReader(body))
	req.Header.Set("x-api-key", cred)
	res, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	n, _ := io.Copy(io.Discard, res.Body)
	return n
}

// BenchmarkOpenStreams: 1,000 streams held open at once (each has sent its first
// event and waits), direct and through the gateway; reports what each stream adds
// to the heap, to goroutine stacks and to the resident set, in KB. The client and
// the upstream are in this process too, so the gateway's share is gateway minus
// direct. The resident set only grows, so compare RSS across separate runs:
//
//	go test -run '^$' -bench 'OpenStreams/direct' -benchtime 1x ./runner/gateway/
//	go test -run '^$' -bench 'OpenStreams/gateway' -benchtime 1x ./runner/gateway/
func BenchmarkOpenStreams(b *testing.B) {
	const n = 1000
	for _, through := range []bool{false, true} {
		b.Run(map[bool]string{false: "direct", true: "gateway"}[through], func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				d := openStreams(b, n, through)
				b.ReportMetric(d.heap/n/1024, "heap-KB/stream")
				b.ReportMetric(d.stack/n/1024, "stack-KB/stream")
				b.ReportMetric(d.rss/n/1024, "RSS-KB/stream")
			}
		})
	}
}

// mem is a process's memory in bytes: heap in use, goroutine stacks, resident set.
type mem struct{ heap, stack, rss float64 }

// openStreams opens n streams (through the gateway or not), waits until each has
// its first event, and returns the heap and RSS growth in bytes while they are open.
func openStreams(b *testing.B, n int, through bool) mem {
	up := newScripted(b, script{In: 100, Out: 20, Chunks: 2})
	release := make(chan struct{})
	up.holdAt1 = func() { <-release }
	gw, base := serve(b, up.config())
	cred := realKey
	if through {
		cred = gw.Issue(Grant{}).Credential()
	} else {
		base = up.srv.URL
	}
	body := messageBody(200, true)
	m0 := memNow()
	var ready, done sync.WaitGroup
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	for i := 0; i < n; i++ {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			req, _ := http.NewRequest("POST", base+"/v1/messages", bytes.NewReader(body))
			req.Header.Set("x-api-key", cred)
			res, err := c.Do(req)
			if err != nil {
				b.Error(err)
				ready.Done()
				return
			}
			defer res.Body.Close()
			firstEvent(res)
			ready.Done()
			_, _ = io.Copy(io.Discard, res.Body)
		}()
	}
	ready.Wait()
	m1 := memNow()
	close(release)
	done.Wait()
	c.CloseIdleConnections()
	return mem{m1.heap - m0.heap, m1.stack - m0.stack, m1.rss - m0.rss}
}

// memNow is the heap in use after a GC, the stacks and the resident set.
func memNow() mem {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	raw, _ := os.ReadFile("/proc/self/statm")
	var size, resident int64
	_, _ = fmt.Sscan(string(raw), &size, &resident)
	return mem{float64(ms.HeapInuse), float64(ms.StackInuse), float64(resident * int64(os.Getpagesize()))}
}
