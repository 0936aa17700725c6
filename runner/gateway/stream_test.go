package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"
)

// streamCall is one streaming request of each API.
var streamCalls = []struct {
	name, path string
	body       map[string]any
	headers    map[string]string
}{
	{"messages", "/v1/messages", map[string]any{"model": sonnet, "max_tokens": 100, "stream": true}, map[string]string{"anthropic-version": "2023-06-01"}},
	{"responses", "/v1/responses", map[string]any{"model": gpt, "stream": true}, nil},
	{"chat", "/v1/chat/completions", map[string]any{"model": gpt, "stream": true}, nil},
}

// openStream starts a streaming call and returns its response.
func openStream(t *testing.T, base, path, cred string, body map[string]any, headers map[string]string) *http.Response {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", base+path, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+cred)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("%s: %d %s", path, res.StatusCode, b)
	}
	return res
}

// firstEvent reads res up to its first data line.
func firstEvent(res *http.Response) bool {
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data:") {
			return true
		}
	}
	return false
}

// TestStreamsUnbuffered: the upstream sends a stream's first event and then waits
// until the client has it before it sends the rest; a gateway that held the stream
// back would leave both waiting. Each API's stream gets through. The sub-test
// "buffering proxy" puts a buffering layer in front of the gateway and shows the
// test catches it: the upstream's wait times out.
func TestStreamsUnbuffered(t *testing.T) {
	for _, buffered := range []bool{false, true} {
		for _, c := range streamCalls {
			name := c.name
			if buffered {
				name = "buffering proxy/" + name
			}
			t.Run(name, func(t *testing.T) {
				timedOut := streamHandshake(t, buffered, c.path, c.body, c.headers)
				if timedOut != buffered {
					t.Fatalf("upstream's wait for the client timed out: %v, want %v", timedOut, buffered)
				}
			})
		}
	}
}

// streamHandshake runs one stream through the gateway (behind a buffering layer
// when buffered) and reports whether the upstream gave up waiting for the client to
// receive the first event.
func streamHandshake(t *testing.T, buffered bool, path string, body map[string]any, headers map[string]string) bool {
	up := newScripted(t, script{In: 10, Out: 5, Chunks: 3})
	got := make(chan struct{})
	var timedOut atomic.Bool
	wait := 10 * time.Second
	if buffered {
		wait = 300 * time.Millisecond
	}
	up.holdAt1 = func() {
		select {
		case <-got:
		case <-time.After(wait):
			timedOut.Store(true)
		}
	}
	gw, base := serve(t, up.config())
	if buffered {
		srv := httptest.NewServer(bufferAll(gw))
		t.Cleanup(srv.Close)
		base = srv.URL
	}
	l := gw.Issue(Grant{})
	res := openStream(t, base, path, l.Credential(), body, headers)
	defer res.Body.Close()
	if !firstEvent(res) {
		t.Fatal("no event arrived")
	}
	close(got)
	_, _ = io.Copy(io.Discard, res.Body)
	if m := l.Revoke(); m.Models[body["model"].(string)].Output != 5 {
		t.Fatalf("metered %+v", m)
	}
	return timedOut.Load()
}

// bufferAll is what the test must catch: a layer that holds the whole response
// back until the handler is done.
func bufferAll(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// TestMeterAcrossReads: usage is read the same when every byte arrives in its own
// read (lines split anywhere), for each API's stream and whole responses.
func TestMeterAcrossReads(t *testing.T) {
	s := script{In: 31, Out: 17, CacheRead: 5, CacheWrite: 3, Chunks: 2}
	up := newScripted(t, s)
	for _, c := range append(streamCalls[:3:3], struct {
		name, path string
		body       map[string]any
		headers    map[string]string
	}{"whole message", "/v1/messages", map[string]any{"model": sonnet, "max_tokens": 100}, nil}) {
		if c.name == "chat" { // straight to the upstream: ask for usage as the gateway would
			c.body = map[string]any{"model": gpt, "stream": true, "stream_options": map[string]any{"include_usage": true}}
		}
		raw, _ := json.Marshal(c.body)
		req, _ := http.NewRequest("POST", up.srv.URL+c.path, bytes.NewReader(raw))
		req.Header.Set("x-api-key", realKey)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var final bool
		var tokens Tokens
		k := map[string]kind{"/v1/messages": kindMessages, "/v1/responses": kindResponses, "/v1/chat/completions": kindChat}[c.path]
		b := &meterBody{rc: io.NopCloser(iotest.OneByteReader(res.Body)), meter: usageMeter{kind: k},
			stream: strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream"),
			done:   func(t Tokens, f bool) { tokens, final = t, f }}
		_, _ = io.Copy(io.Discard, b)
		_ = b.Close()
		res.Body.Close()
		want := Tokens{Input: s.In, Output: s.Out, CacheRead: s.CacheRead, CacheWrite: s.CacheWrite}
		if k != kindMessages {
			want.CacheWrite = 0 // OpenAI reports no cache writes
		}
		if !final || tokens != want {
			t.Fatalf("%s: %+v final %v, want %+v", c.name, tokens, final, want)
		}
	}
}
