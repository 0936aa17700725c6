package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// TestBudgetRefusalStopsClients: a call a cap has no room for is refused before
// it reaches the upstream, in the shape that stops each provider's client: the
// Anthropic SDK (two retries by default) makes one request and returns "credit
// balance is too low"; OpenAI gets 429 insufficient_quota. Both carry
// x-should-retry: false. The refusal is recorded and OnBudget told once.
func TestBudgetRefusalStopsClients(t *testing.T) {
	up := newScripted(t, script{In: 10, Out: 10})
	gw, base := serve(t, up.config())
	told := make(chan string, 4)
	l := gw.Issue(Grant{Caps: []Cap{{Key: "task:1", RemainingUSD: 5}, {Key: "goal:3", RemainingUSD: 0.001}},
		OnBudget: func(key string) { told <- key }})
	c := sdkClient(base, &seen{rt: http.DefaultTransport}, option.WithAPIKey(l.Credential()))
	_, err := c.Messages.New(context.Background(), hello())
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.RawJSON(), "credit balance is too low") ||
		apiErr.Response.Header.Get("x-should-retry") != "false" {
		t.Fatalf("Anthropic SDK got %v", err)
	}
	code, body, h := oaCall(t, http.DefaultTransport, base, "/v1/responses", l.Credential(), map[string]any{"model": gpt, "input": "hi"})
	var e struct{ Error struct{ Type, Code string } }
	_ = json.Unmarshal([]byte(body), &e)
	if code != 429 || e.Error.Type != "insufficient_quota" || e.Error.Code != "insufficient_quota" || h.Get("x-should-retry") != "false" {
		t.Fatalf("OpenAI client got %d %s", code, body)
	}
	m := l.Revoke()
	if m.Refused != 2 || m.BudgetRefused != 2 || m.BudgetKey != "goal:3" || m.Calls != 0 || up.count() != 0 {
		t.Fatalf("metered %+v, upstream calls %d: want 2 budget refusals by goal:3 and no call", m, up.count())
	}
	if key := <-told; key != "goal:3" || len(told) != 0 {
		t.Fatalf("OnBudget told %q and %d more", key, len(told))
	}
}

// TestOnBudgetMayRevoke: the natural reaction to a budget refusal, revoking the
// credential from OnBudget, does not deadlock on the refused call.
func TestOnBudgetMayRevoke(t *testing.T) {
	up := newScripted(t, script{In: 10, Out: 10})
	gw, base := serve(t, up.config())
	revoked := make(chan Metered, 1)
	var l *Lease
	l = gw.Issue(Grant{Caps: []Cap{{Key: "goal:3", RemainingUSD: 0.001}},
		OnBudget: func(string) { revoked <- l.Revoke() }})
	go func() { // a deadlock would hang the call itself
		body := map[string]any{"model": sonnet, "max_tokens": 1000}
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", base+"/v1/messages", bytes.NewReader(raw))
		req.Header.Set("x-api-key", l.Credential())
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	}()
	select {
	case m := <-revoked:
		if m.BudgetRefused != 1 {
			t.Fatalf("metered %+v", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Revoke from OnBudget deadlocked")
	}
}

// TestRetryableRefusalWouldRetry shows why the shape matters: the same SDK given a
// plain 429 (what a naive gateway might answer) asks three times.
func TestRetryableRefusalWouldRetry(t *testing.T) {
	var n atomic.Int32
	srv := newPlain(t, func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("retry-after-ms", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(429)
		_, _ = w.Write([]byte(`{"type":"error","error":{"type":"rate_limit_error","message":"budget"}}`))
	})
	c := sdkClient(srv, &seen{rt: http.DefaultTransport}, option.WithAPIKey("x"))
	if _, err := c.Messages.New(context.Background(), hello()); err == nil || n.Load() != 3 {
		t.Fatalf("err %v after %d requests, want an error after 3", err, n.Load())
	}
}

// TestSharedCapConcurrent: 8 credentials share one goal cap and fire calls as fast
// as they can, 8 in flight at a time, each until refused. With the reservation the
// settled spend never passes the cap; the sub-test "no reservation" (checking only
// that the cap is not yet spent) passes it, which is what the test is there to catch.
func TestSharedCapConcurrent(t *testing.T) {
	for _, noReserve := range []bool{false, true} {
		name := map[bool]string{false: "reservation", true: "no reservation"}[noReserve]
		t.Run(name, func(t *testing.T) {
			spent, capUSD, perCall, worstCall, calls := sharedCapRun(t, noReserve, script{In: 40, Out: 600})
			over := spent - capUSD
			t.Logf("%s: one call costs $%.6f and reserves $%.6f", name, perCall, worstCall)
			t.Logf("%s: %d calls spent $%.6f of a $%.2f cap: over by $%.6f (%.2f calls' worth)", name, calls, spent, capUSD, over, over/perCall)
			if !noReserve && (over > 1e-9 || spent < capUSD-worstCall) {
				t.Fatalf("spent $%.6f against a $%.2f cap", spent, capUSD)
			}
			if noReserve && over <= 0 {
				t.Fatalf("without the reservation the cap held (spent $%.6f): the test shows nothing", spent)
			}
		})
	}
}

// TestSharedCapUndercount measures the one way past a cap with the reservation: an
// estimate below the truth. The upstream reports 20,000 input tokens for a body of
// ~100 bytes (estimated at ~50), as a small PDF or a pathological tokenisation
// might; each call then costs more than it reserved, and the spend passes the cap
// by at most the undercount of the calls in flight (8 here).
func TestSharedCapUndercount(t *testing.T) {
	spent, capUSD, perCall, worstCall, calls := sharedCapRun(t, false, script{In: 20000, Out: 600})
	over := spent - capUSD
	t.Logf("undercount: %d calls, each costing $%.6f against a $%.6f reservation, spent $%.6f of $%.2f: over by $%.6f (%.2f calls' worth)",
		calls, perCall, worstCall, spent, capUSD, over, over/perCall)
	if over > 8*(perCall-worstCall)+1e-9 {
		t.Fatalf("over by $%.6f, more than the 8 calls in flight undercounted", over)
	}
}

// sharedCapRun runs the shared-cap race and returns the spend, the cap, one call's
// cost and its reservation, and the calls made.
func sharedCapRun(t *testing.T, noReserve bool, s script) (spent, capUSD, perCall, worstCall float64, calls int) {
	up := newScripted(t, s)
	up.delay = 5 * time.Millisecond
	gw, base := serve(t, up.config())
	gw.noReserve = noReserve
	capUSD = 0.3
	p, _ := gw.priceOf(sonnet)
	perCall = Tokens{Input: s.In, Output: s.Out}.cost(p)
	body := map[string]any{"model": sonnet, "max_tokens": 1000, "messages": []any{map[string]any{"role": "user", "content": "go"}}}
	raw, _ := json.Marshal(body)
	worstCall = (math.Ceil(float64(len(raw))/DefaultBytesPerToken)*p.CacheWritePerMTok + 1000*p.OutputPerMTok) / 1e6
	var wg sync.WaitGroup
	leases := make([]*Lease, 8)
	for i := range leases {
		leases[i] = gw.Issue(Grant{Caps: []Cap{{Key: "goal:3", RemainingUSD: capUSD}, {Key: "task:" + string(rune('a'+i)), RemainingUSD: 1}}})
		wg.Add(1)
		go func(l *Lease) {
			defer wg.Done()
			for k := 0; k < 100; k++ {
				if code, _, _ := oaCall(t, http.DefaultTransport, base, "/v1/messages", l.Credential(), body); code != 200 {
					return
				}
			}
		}(leases[i])
	}
	wg.Wait()
	for _, l := range leases {
		m := l.Revoke()
		spent += m.CostUSD
		calls += m.Calls
		if m.BudgetRefused == 0 {
			t.Errorf("a credential was never refused: %+v", m)
		}
	}
	if _, live := gw.CapState("goal:3"); live {
		t.Error("the pool outlived its credentials")
	}
	return spent, capUSD, perCall, worstCall, calls
}

// TestCutStreamChargedReservation: a client that hangs up on a stream before its
// usage arrives is charged the call's reservation, not nothing (the provider bills
// what it generated).
func TestCutStreamChargedReservation(t *testing.T) {
	up := newScripted(t, script{In: 10, Out: 5, Chunks: 3})
	release := make(chan struct{})
	up.holdAt1 = func() { <-release }
	gw, base := serve(t, up.config())
	l := gw.Issue(Grant{Caps: []Cap{{Key: "task:1", RemainingUSD: 1}}})
	body := map[string]any{"model": sonnet, "max_tokens": 2000, "stream": true}
	res := openStream(t, base, "/v1/messages", l.Credential(), body, nil)
	firstEvent(res)
	res.Body.Close()
	time.Sleep(50 * time.Millisecond)
	close(release)
	m := l.Revoke()
	raw, _ := json.Marshal(body)
	worst := (math.Ceil(float64(len(raw))/DefaultBytesPerToken)*3.75 + 2000*15) / 1e6
	if u := m.Models[sonnet]; u.Estimated != 1 || math.Abs(m.CostUSD-worst) > 1e-9 {
		t.Fatalf("metered %+v (cost %v), want one estimated call charged %v", u, m.CostUSD, worst)
	}
}

// TestRevokeEndsCallsInFlight: Revoke cuts a stream still running and returns its
// final usage, the cut call charged its reservation.
func TestRevokeEndsCallsInFlight(t *testing.T) {
	up := newScripted(t, script{In: 10, Out: 5, Chunks: 3})
	release := make(chan struct{})
	defer close(release)
	up.holdAt1 = func() { <-release }
	gw, base := serve(t, up.config())
	l := gw.Issue(Grant{})
	res := openStream(t, base, "/v1/responses", l.Credential(), map[string]any{"model": gpt, "stream": true, "max_output_tokens": 100}, nil)
	defer res.Body.Close()
	firstEvent(res)
	done := make(chan Metered)
	go func() { done <- l.Revoke() }()
	select {
	case m := <-done:
		if u := m.Models[gpt]; u.Estimated != 1 || u.CostUSD <= 0 {
			t.Fatalf("metered %+v", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Revoke waited on a stream it should have cut")
	}
}

// TestUnpricedModel: a model without a price is refused under a cap (its cost
// could not be held to it) and metered in tokens without one.
func TestUnpricedModel(t *testing.T) {
	s := script{In: 10, Out: 5}
	up := newScripted(t, s)
	gw, base := serve(t, up.config())
	capped := gw.Issue(Grant{Caps: []Cap{{Key: "task:1", RemainingUSD: 100}}})
	code, body, _ := oaCall(t, http.DefaultTransport, base, "/v1/responses", capped.Credential(), map[string]any{"model": "mystery-1"})
	if code != 400 || !strings.Contains(body, "no price") {
		t.Fatalf("capped: %d %s", code, body)
	}
	free := gw.Issue(Grant{})
	if code, _, _ := oaCall(t, http.DefaultTransport, base, "/v1/responses", free.Credential(), map[string]any{"model": "mystery-1"}); code != 200 {
		t.Fatalf("uncapped: %d", code)
	}
	u := free.Revoke().Models["mystery-1"]
	if !u.Unpriced || u.Output != 5 || u.CostUSD != 0 {
		t.Fatalf("uncapped metered %+v", u)
	}
	if capped.Revoke().Refused != 1 || up.count() != 1 {
		t.Fatal("the capped call was not refused alone")
	}
}

// TestPoolBookkeeping: a later grant lowers a shared cap's limit, never raises it;
// a revoked credential's spend leaves the pool's spend and limit together, so the
// room stays; the pool goes with its last credential.
func TestPoolBookkeeping(t *testing.T) {
	var l ledger
	a := l.join([]Cap{{Key: "goal:1", RemainingUSD: 10}})
	if _, ok := l.reserve(context.Background(), a, 4); !ok {
		t.Fatal("4 of 10 refused")
	}
	l.settle(a, 4, 3)
	b := l.join([]Cap{{Key: "goal:1", RemainingUSD: 20}})
	if st, _ := l.state("goal:1"); st.LimitUSD != 10 || st.SpentUSD != 3 || st.Credentials != 2 {
		t.Fatalf("after a wider grant: %+v", st)
	}
	l.leave(a, 3)
	st, _ := l.state("goal:1")
	if st.LimitUSD != 7 || st.SpentUSD != 0 || st.Credentials != 1 {
		t.Fatalf("after the first left: %+v", st)
	}
	l.join([]Cap{{Key: "goal:1", RemainingUSD: 2}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if key, ok := l.reserve(ctx, b, 2.5); ok || key != "goal:1" || ctx.Err() != nil {
		t.Fatal("a narrower grant did not narrow the pool")
	}
}
