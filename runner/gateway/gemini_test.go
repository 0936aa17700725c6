package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/internal/scriptedapi"
)

// These tests are a Gemini client written out (no Google SDK is in the module): the
// key as x-goog-api-key or ?key=, JSON bodies, and an SSE reader.

const (
	gemini       = "gemini-2.5-pro"
	geminiSecret = "AIza-provider-gemini-secret-for-the-gateway"
)

// geminiBody is a generateContent request offering one tool (so the scripted API
// answers it from its script), with gen as its generationConfig when not nil.
func geminiBody(gen map[string]any) map[string]any {
	b := map[string]any{
		"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "hi"}}}},
		"tools":    []any{map[string]any{"functionDeclarations": []any{map[string]any{"name": "write_file"}}}},
	}
	if gen != nil {
		b["generationConfig"] = gen
	}
	return b
}

// gmCall sends body (nil: a GET) to base+pathQuery with cred as x-goog-api-key, or,
// inQuery, as ?key=; it returns the status, the body (a stream's event data, one a
// line) and the headers.
func gmCall(t *testing.T, rt http.RoundTripper, base, pathQuery, cred string, inQuery bool, body any) (int, string, http.Header) {
	t.Helper()
	method, rd := http.MethodGet, io.Reader(nil)
	if body != nil {
		raw, _ := json.Marshal(body)
		method, rd = http.MethodPost, bytes.NewReader(raw)
	}
	if inQuery {
		sep := "?"
		if strings.Contains(pathQuery, "?") {
			sep = "&"
		}
		pathQuery += sep + "key=" + cred
	}
	req, _ := http.NewRequest(method, base+pathQuery, rd)
	if !inQuery {
		req.Header.Set("x-goog-api-key", cred)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), res.Header
	}
	var events []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, data)
		}
	}
	return res.StatusCode, strings.Join(events, "\n"), res.Header
}

// outbound records what the gateway sent upstream: each URL and header set.
type outbound struct {
	rt   http.RoundTripper
	mu   sync.Mutex
	urls []string     // the requests sent whole and answered (a refused call's body never ends)
	all  bytes.Buffer // every request's URL and headers, answered or not
}

func (o *outbound) RoundTrip(r *http.Request) (*http.Response, error) {
	o.mu.Lock()
	fmt.Fprintln(&o.all, r.URL.String())
	_ = r.Header.Write(&o.all)
	o.mu.Unlock()
	res, err := o.rt.RoundTrip(r)
	if err == nil {
		o.mu.Lock()
		o.urls = append(o.urls, r.URL.String())
		o.mu.Unlock()
	}
	return res, err
}

// geminiGateway serves a gateway in front of upstream with the Gemini key; its
// transport records what went upstream.
func geminiGateway(t *testing.T, upstream string) (*Gateway, string, *outbound) {
	out := &outbound{rt: http.DefaultTransport}
	gw, base := serve(t, Config{Gemini: Upstream{BaseURL: upstream, Key: geminiSecret}, Prices: testPrices(), Transport: out})
	return gw, base, out
}

// wantGemini fails unless m metered calls of gemini worth the scripted usage u,
// converted: input without the cached tokens, output with the thoughts.
func wantGemini(t *testing.T, m Metered, u scriptedapi.Usage, calls int) {
	t.Helper()
	want := Tokens{Input: u.Input - u.Cached, CacheRead: u.Cached, Output: u.Output}
	got := m.Models[gemini]
	if got.Tokens != want || got.Calls != calls || got.Estimated != 0 {
		t.Fatalf("metered %+v, want %+v over %d calls, none estimated", got, want, calls)
	}
	p, _ := models.PriceOf(testPrices(), gemini)
	if math.Abs(got.CostUSD-want.cost(p)) > 1e-9 || want.cost(p) == 0 {
		t.Fatalf("cost %v, want %v", got.CostUSD, want.cost(p))
	}
}

// TestGeminiMetered: generateContent and streamGenerateContent?alt=sse against the
// scripted Gemini API, the credential sent as x-goog-api-key and as ?key=: each
// answer arrives, the tokens metered are the script's (cached apart, thoughts as
// output), the API saw only the provider's key, the query kept alt=sse and lost the
// credential, and the client never saw the key.
func TestGeminiMetered(t *testing.T) {
	api := scriptedapi.NewGemini(t, gemini,
		scriptedapi.Turn{Text: "one", Usage: scriptedapi.Usage{Input: 900, Cached: 300, Output: 120, Reasoning: 40}},
		scriptedapi.Turn{Text: "two", Usage: scriptedapi.Usage{Input: 1500, Cached: 1000, Output: 60, Reasoning: 20}},
		scriptedapi.Turn{Text: "three", Usage: scriptedapi.Usage{Input: 2000, Output: 10}})
	gw, base, out := geminiGateway(t, api.URL)
	l := gw.Issue(Grant{})
	rec := &seen{rt: http.DefaultTransport}
	for i, c := range []struct {
		path    string
		inQuery bool
		answer  string
	}{
		{"/v1beta/models/" + gemini + ":generateContent", false, `"text":"one"`},
		{"/v1beta/models/" + gemini + ":streamGenerateContent?alt=sse", true, `"text":"two"`},
		{"/v1beta/models/" + gemini + ":streamGenerateContent?alt=sse", false, `"text":"three"`},
	} {
		code, got, _ := gmCall(t, rec, base, c.path, l.Credential(), c.inQuery, geminiBody(nil))
		if code != 200 || !strings.Contains(got, c.answer) || !strings.Contains(got, `"usageMetadata"`) {
			t.Fatalf("call %d %s: %d %s", i, c.path, code, got)
		}
	}
	wantGemini(t, l.Revoke(), api.Sum(), 3)
	if keys := api.Keys(); len(keys) != 1 || keys[0] != geminiSecret {
		t.Fatalf("the API saw the keys %q", keys)
	}
	if rec.contains(geminiSecret) {
		t.Fatal("the client saw the provider key")
	}
	if strings.Contains(out.all.String(), credPrefix) || strings.Contains(out.all.String(), "key=") {
		t.Fatalf("the worker's credential went upstream:\n%s", out.all.String())
	}
	if !strings.HasSuffix(out.urls[1], ":streamGenerateContent?alt=sse") || !strings.HasSuffix(out.urls[2], "?alt=sse") {
		t.Fatalf("the streams' queries upstream: %q", out.urls)
	}
}
