package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/runner/internal/scriptedapi"
)

// cumulativeChunks answers a Gemini call as the real API streams: three chunks, each
// with the usage so far (the prompt's count on all, the candidates' growing), the
// last with the finish reason, unless the request says X-Test-Cut; as SSE with
// alt=sse, as one JSON array without.
func cumulativeChunks(w http.ResponseWriter, r *http.Request) {
	var chunks []string
	for i := 1; i <= 3; i++ {
		finish := ""
		if i == 3 && r.Header.Get("X-Test-Cut") == "" {
			finish = `,"finishReason":"STOP"`
		}
		chunks = append(chunks, fmt.Sprintf(`{"candidates":[{"content":{"role":"model","parts":[{"text":"part %d"}]}%s}],`+
			`"usageMetadata":{"promptTokenCount":500,"cachedContentTokenCount":200,"candidatesTokenCount":%d,"thoughtsTokenCount":%d}}`,
			i, finish, 10*i, 5*i))
	}
	if r.URL.Query().Get("alt") != "sse" {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, "["+strings.Join(chunks, ",\r\n")+"]")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, c := range chunks {
		fmt.Fprintf(w, "data: %s\r\n\r\n", c)
		w.(http.Flusher).Flush()
	}
}

// TestGeminiStreamTakesLastUsage: the usage of a stream whose chunks each carry the
// usage so far is the last chunk's (500 prompt with 200 cached, 30 candidates and 15
// thoughts), not their sum, as SSE and as a JSON array; a stream that ends without a
// finish reason is charged its reservation, estimated, not the part it counted.
func TestGeminiStreamTakesLastUsage(t *testing.T) {
	gw, base, _ := geminiGateway(t, newPlain(t, cumulativeChunks))
	want := Tokens{Input: 300, CacheRead: 200, Output: 45}
	for _, q := range []string{"?alt=sse", ""} {
		l := gw.Issue(Grant{})
		code, got, _ := gmCall(t, http.DefaultTransport, base, "/v1beta/models/"+gemini+":streamGenerateContent"+q, l.Credential(), false, geminiBody(nil))
		if code != 200 || !strings.Contains(got, "part 3") {
			t.Fatalf("%q: %d %s", q, code, got)
		}
		if u := l.Revoke().Models[gemini]; u.Tokens != want || u.Estimated != 0 {
			t.Fatalf("%q: metered %+v, want %+v", q, u, want)
		}
	}
	l := gw.Issue(Grant{})
	req, _ := http.NewRequest("POST", base+"/v1beta/models/"+gemini+":streamGenerateContent?alt=sse", strings.NewReader(`{"contents":[]}`))
	req.Header.Set("x-goog-api-key", l.Credential())
	req.Header.Set("X-Test-Cut", "1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if u := l.Revoke().Models[gemini]; u.Estimated != 1 || u.CostUSD < 0.32 {
		t.Fatalf("a stream without its end: %+v; want it estimated at its reservation (32000 output tokens)", u)
	}
}

// googleError decodes Google's error shape.
func googleError(t *testing.T, body string) (code int, status, msg string) {
	t.Helper()
	var e struct {
		Error struct {
			Code    int
			Status  string
			Message string
		}
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("not Google's error shape: %s", body)
	}
	return e.Error.Code, e.Error.Status, e.Error.Message
}

// TestDeadCredentialGeminiShape: a revoked, unknown, provider's or missing
// credential, as header or query, is refused 401 UNAUTHENTICATED in Google's shape,
// and reaches no upstream.
func TestDeadCredentialGeminiShape(t *testing.T) {
	api := scriptedapi.NewGemini(t, gemini)
	gw, base, out := geminiGateway(t, api.URL)
	l := gw.Issue(Grant{})
	l.Revoke()
	for _, cred := range []string{l.Credential(), "csgw-nope", geminiSecret, ""} {
		for _, inQuery := range []bool{false, true} {
			code, got, _ := gmCall(t, http.DefaultTransport, base, "/v1beta/models/"+gemini+":generateContent", cred, inQuery, geminiBody(nil))
			c, status, msg := googleError(t, got)
			if code != 401 || c != 401 || status != "UNAUTHENTICATED" || msg == "" {
				t.Fatalf("credential %q (query %v): %d %s", cred, inQuery, code, got)
			}
		}
	}
	if len(out.urls) != 0 {
		t.Fatalf("upstream got %q", out.urls)
	}
}

// TestGeminiBudgetRefusal: the reservation reads generationConfig.maxOutputTokens: a
// call limited to 100 output tokens fits a $0.05 cap, the same call without a limit
// (reserved for the default 32000, $0.32) does not and is refused 400
// FAILED_PRECONDITION with x-should-retry: false (the shape Gemini CLI neither
// retries nor falls back from), before it reaches the upstream.
func TestGeminiBudgetRefusal(t *testing.T) {
	api := scriptedapi.NewGemini(t, gemini, scriptedapi.Turn{Text: "ok", Usage: scriptedapi.Usage{Input: 100, Output: 20}})
	gw, base, out := geminiGateway(t, api.URL)
	l := gw.Issue(Grant{Caps: []Cap{{Key: "task:9", RemainingUSD: 0.05}}})
	path := "/v1beta/models/" + gemini + ":generateContent"
	if code, got, _ := gmCall(t, http.DefaultTransport, base, path, l.Credential(), false, geminiBody(map[string]any{"maxOutputTokens": 100})); code != 200 {
		t.Fatalf("a call within the cap: %d %s", code, got)
	}
	code, got, h := gmCall(t, http.DefaultTransport, base, path, l.Credential(), true, geminiBody(map[string]any{"temperature": 0}))
	c, status, msg := googleError(t, got)
	if code != 400 || c != 400 || status != "FAILED_PRECONDITION" || !strings.Contains(msg, "task:9") || h.Get("x-should-retry") != "false" {
		t.Fatalf("a call past the cap: %d %s (x-should-retry %q)", code, got, h.Get("x-should-retry"))
	}
	m := l.Revoke()
	if m.Calls != 1 || m.BudgetRefused != 1 || len(out.urls) != 1 {
		t.Fatalf("metered %+v, upstream %q: want one call forwarded and one refused", m, out.urls)
	}
}

// TestGeminiFreeCalls: countTokens and the model list are forwarded unmetered (no
// tokens, no reservation), with the provider's key and not the credential; an
// endpoint the gateway cannot meter (batches) is refused 404 in Google's shape.
func TestGeminiFreeCalls(t *testing.T) {
	api := scriptedapi.NewGemini(t, gemini)
	gw, base, out := geminiGateway(t, api.URL)
	l := gw.Issue(Grant{})
	code, got, _ := gmCall(t, http.DefaultTransport, base, "/v1beta/models/"+gemini+":countTokens", l.Credential(), true, geminiBody(nil))
	if code != 200 || !strings.Contains(got, "totalTokens") {
		t.Fatalf("countTokens: %d %s", code, got)
	}
	gmCall(t, http.DefaultTransport, base, "/v1beta/models?pageSize=5", l.Credential(), true, nil)
	code, got, _ = gmCall(t, http.DefaultTransport, base, "/v1beta/models/"+gemini+":batchGenerateContent", l.Credential(), false, geminiBody(nil))
	if c, status, _ := googleError(t, got); code != 404 || c != 404 || status != "NOT_FOUND" {
		t.Fatalf("batch: %d %s", code, got)
	}
	m := l.Revoke()
	if m.Calls != 2 || len(m.Models) != 0 || m.CostUSD != 0 {
		t.Fatalf("metered %+v; want two free calls", m)
	}
	if len(out.urls) != 2 || !strings.HasSuffix(out.urls[1], "/v1beta/models?pageSize=5") {
		t.Fatalf("upstream got %q", out.urls)
	}
	if keys := api.Keys(); len(keys) != 1 || keys[0] != geminiSecret {
		t.Fatalf("the API saw the keys %q", keys)
	}
}
