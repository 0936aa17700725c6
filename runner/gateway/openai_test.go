package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// No OpenAI SDK is in the module, so these tests are an OpenAI client written out:
// Bearer auth, JSON bodies, and an SSE reader that collects each event's data.

const gpt = "gpt-5-mini"

// oaCall posts body to base+path with cred as the Bearer key; it returns the
// status, the body (for a stream: each event's data, one per line) and headers.
func oaCall(t *testing.T, rt http.RoundTripper, base, path, cred string, body any) (int, string, http.Header) {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", base+path, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+cred)
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
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, data)
		}
	}
	return res.StatusCode, strings.Join(events, "\n"), res.Header
}

// TestOpenAIMetered: Responses and Chat Completions, streamed and not, through the
// gateway: each answer arrives, the tokens metered are the scripted ones (cached
// tokens counted apart from input), and the client never sees the key.
func TestOpenAIMetered(t *testing.T) {
	s := script{In: 900, Out: 120, CacheRead: 300, Chunks: 4}
	up := newScripted(t, s)
	gw, base := serve(t, up.config())
	l := gw.Issue(Grant{})
	rec := &seen{rt: http.DefaultTransport}
	for _, c := range []struct {
		path   string
		body   map[string]any
		answer string
	}{
		{"/v1/responses", map[string]any{"model": gpt, "input": "hi"}, `"status":"completed"`},
		{"/v1/responses", map[string]any{"model": gpt, "input": "hi", "stream": true}, `"type":"response.completed"`},
		{"/v1/chat/completions", map[string]any{"model": gpt, "messages": []any{}}, `"finish_reason":"stop"`},
		{"/v1/chat/completions", map[string]any{"model": gpt, "messages": []any{}, "stream": true, "stream_options": map[string]any{"include_usage": true}}, `"completion_tokens":120`},
	} {
		code, got, _ := oaCall(t, rec, base, c.path, l.Credential(), c.body)
		if code != 200 || !strings.Contains(got, c.answer) {
			t.Fatalf("%s %v: %d %s", c.path, c.body["stream"], code, got)
		}
	}
	wantTokens(t, l.Revoke(), gpt, s, 4)
	if rec.contains(realKey) {
		t.Fatal("the client saw the provider key")
	}
}

// TestChatStreamAsksForUsage: a streamed Chat call that does not ask for usage is
// sent upstream with stream_options.include_usage, so it is metered; the usage
// chunk (empty choices) reaches the client too (documented: not stripped). With
// the request left as it was, the stream would carry no usage and the call would be
// charged its reservation, estimated.
func TestChatStreamAsksForUsage(t *testing.T) {
	s := script{In: 50, Out: 7, Chunks: 2}
	up := newScripted(t, s)
	gw, base := serve(t, up.config())
	l := gw.Issue(Grant{})
	body := map[string]any{"model": gpt, "messages": []any{map[string]any{"role": "user", "content": "hi"}}, "stream": true, "temperature": 0.5}
	code, got, _ := oaCall(t, http.DefaultTransport, base, "/v1/chat/completions", l.Credential(), body)
	if code != 200 || !strings.HasSuffix(got, "[DONE]") || !strings.Contains(got, `"choices":[]`) {
		t.Fatalf("%d %s", code, got)
	}
	var sent map[string]any
	_ = json.Unmarshal(up.lastBody(), &sent)
	if opts, _ := sent["stream_options"].(map[string]any); opts["include_usage"] != true || sent["temperature"] != 0.5 {
		t.Fatalf("upstream got %v", sent)
	}
	wantTokens(t, l.Revoke(), gpt, s, 1)

	// Without the injection (a client that set include_usage false gets true
	// anyway): the same holds.
	l = gw.Issue(Grant{})
	body["stream_options"] = map[string]any{"include_usage": false}
	oaCall(t, http.DefaultTransport, base, "/v1/chat/completions", l.Credential(), body)
	wantTokens(t, l.Revoke(), gpt, s, 1)
}

// TestDeadCredentialOpenAIShape: a revoked or unknown credential is refused 401
// with OpenAI's invalid_api_key error, and reaches no upstream.
func TestDeadCredentialOpenAIShape(t *testing.T) {
	up := newScripted(t, script{In: 1, Out: 1})
	gw, base := serve(t, up.config())
	l := gw.Issue(Grant{})
	l.Revoke()
	for _, cred := range []string{l.Credential(), "csgw-nope", realKey, ""} {
		code, got, _ := oaCall(t, http.DefaultTransport, base, "/v1/responses", cred, map[string]any{"model": gpt})
		var e struct {
			Error struct{ Message, Type, Code string }
		}
		if code != 401 || json.Unmarshal([]byte(got), &e) != nil || e.Error.Code != "invalid_api_key" ||
			e.Error.Type != "invalid_request_error" || e.Error.Message == "" {
			t.Fatalf("credential %q: %d %s", cred, code, got)
		}
	}
	if up.count() != 0 {
		t.Fatalf("upstream got %d calls", up.count())
	}
}
