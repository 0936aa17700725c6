package gateway

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestABodyStreamsOnWhileItArrives: the upstream has most of a large request body
// while the worker is still sending the rest (the gateway does not read a body
// whole before it forwards it), and the call is then served and metered as usual.
// With every body read whole first (bufferAll) the upstream sees nothing before
// the worker finishes, and the test fails.
func TestABodyStreamsOnWhileItArrives(t *testing.T) {
	for _, buffered := range []bool{false, true} {
		arrived := streamedArrival(t, buffered)
		if arrived != !buffered {
			t.Fatalf("buffered=%v: the upstream had the first half before the worker sent the rest: %v", buffered, arrived)
		}
	}
}

// streamedArrival sends a 128 KB Messages call in two halves and reports whether
// the upstream had (nearly all of) the first half before the second was sent.
func streamedArrival(t *testing.T, buffered bool) bool {
	up := newScripted(t, script{In: 100, Out: 20})
	gw, base := serve(t, up.config())
	gw.bufferAll = buffered
	half := make(chan struct{})
	up.mu.Lock()
	up.onRead = func(n int64) {
		if n >= 60<<10 {
			select {
			case <-half:
			default:
				close(half)
			}
		}
	}
	up.mu.Unlock()
	l := gw.Issue(Grant{Caps: []Cap{{Key: "task:1", RemainingUSD: 10}}})
	body := messageBody(128<<10, false)
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", base+"/v1/messages", pr)
	req.ContentLength = int64(len(body))
	req.Header.Set("x-api-key", l.Credential())
	done := make(chan *http.Response, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	if _, err := pw.Write(body[:64<<10]); err != nil {
		t.Fatal(err)
	}
	arrived := false
	select {
	case <-half:
		arrived = true
	case <-time.After(2 * time.Second):
	}
	if _, err := pw.Write(body[64<<10:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	res := <-done
	if res == nil || res.StatusCode != 200 {
		t.Fatalf("buffered=%v: %v", buffered, res)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if m := l.Revoke(); m.Calls != 1 || m.Models[sonnet].Input != 100 || !bytes.Equal(up.lastBody(), body) {
		t.Fatalf("buffered=%v: metered %+v", buffered, m)
	}
	return arrived
}

// TestARefusedBodyNeverReachesTheUpstreamWhole: a call refused at its body's end
// (here, for the budget) streamed most of its body upstream, but never the whole
// of it, so the provider has no request to serve or bill. With the last byte sent
// before the call is admitted (holdNothing) the upstream gets a whole request, and
// the test fails.
func TestARefusedBodyNeverReachesTheUpstreamWhole(t *testing.T) {
	for _, holdNothing := range []bool{false, true} {
		up := newScripted(t, script{In: 100, Out: 20})
		gw, base := serve(t, up.config())
		gw.holdNothing = holdNothing
		l := gw.Issue(Grant{Caps: []Cap{{Key: "task:1", RemainingUSD: 1e-6}}})
		req, _ := http.NewRequest("POST", base+"/v1/messages", bytes.NewReader(messageBody(100<<10, false)))
		req.Header.Set("x-api-key", l.Credential())
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		m := l.Revoke()
		up.srv.Close() // waits for the upstream's handlers to finish
		up.mu.Lock()
		served, unfinished := up.calls, up.unfinished
		up.mu.Unlock()
		if whole := served > 0; whole != holdNothing {
			t.Fatalf("holdNothing=%v: upstream served %d, unfinished %d; metered %+v", holdNothing, served, unfinished, m)
		}
		// unfinished is 1 when the upstream had begun to receive the body, 0 when the
		// refusal came first (a loaded machine can read the whole body from the client
		// before the upstream connection is up): either way no whole request reached it.
		if !holdNothing && (res.StatusCode != 400 || !strings.Contains(string(got), "credit balance is too low") || m.CostUSD != 0 || m.BudgetRefused != 1 || unfinished > 1) {
			t.Fatalf("%d %s; metered %+v; unfinished %d", res.StatusCode, got, m, unfinished)
		}
	}
}
