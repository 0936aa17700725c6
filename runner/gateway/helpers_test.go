package gateway

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// testPrices are the default Anthropic prices plus one OpenAI model and one Gemini
// model.
func testPrices() []models.ModelPrice {
	return append(models.DefaultPrices(), models.ModelPrice{Pattern: `gpt-5.*`, InputPerMTok: 1.25,
		OutputPerMTok: 10, CacheReadPerMTok: 0.125},
		models.ModelPrice{Pattern: `gemini-2\.5-pro.*`, InputPerMTok: 1.25, OutputPerMTok: 10, CacheReadPerMTok: 0.31})
}

// serve starts a gateway Service for cfg on a real socket and returns it and its
// base URL; it stops with the test.
func serve(t testing.TB, cfg Config) (*Gateway, string) {
	t.Helper()
	gw, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	svc := NewService(gw, "127.0.0.1:0")
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = svc.Stop(ctx)
	})
	return gw, "http://" + svc.Addr()
}

// seen records every byte and header a client received, to look for the key.
type seen struct {
	rt http.RoundTripper
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *seen) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := s.rt.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	_ = res.Header.Write(&s.b)
	s.mu.Unlock()
	res.Body = &teeBody{rc: res.Body, s: s}
	return res, nil
}

func (s *seen) contains(needle string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Contains(s.b.Bytes(), []byte(needle))
}

func (s *seen) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

type teeBody struct {
	rc io.ReadCloser
	s  *seen
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	t.s.mu.Lock()
	t.s.b.Write(p[:n])
	t.s.mu.Unlock()
	return n, err
}

func (t *teeBody) Close() error { return t.rc.Close() }

// wantTokens fails unless model's usage in m is calls × s.
func wantTokens(t *testing.T, m Metered, model string, s script, calls int) {
	t.Helper()
	u, ok := m.Models[model]
	n := int64(calls)
	want := Tokens{Input: s.In * n, Output: s.Out * n, CacheRead: s.CacheRead * n, CacheWrite: s.CacheWrite * n}
	if !ok || u.Tokens != want || u.Calls != calls || u.Estimated != 0 {
		t.Fatalf("metered %s = %+v (ok %v), want %+v over %d calls, none estimated", model, u, ok, want, calls)
	}
	p, _ := models.PriceOf(testPrices(), model)
	if cost := want.cost(p); math.Abs(u.CostUSD-cost) > 1e-9 || math.Abs(m.CostUSD-cost) > 1e-9 {
		t.Fatalf("cost %v (total %v), want %v", u.CostUSD, m.CostUSD, cost)
	}
}

// newPlain serves h on a real socket and returns its URL.
func newPlain(t testing.TB, h http.HandlerFunc) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
