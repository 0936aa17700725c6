package gateway

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

// TestUpstreamFailures: a provider that cannot be dialled costs nothing, is
// answered 502 in the provider's shape, and counts no call forwarded (a body
// streams upstream, so nothing of it left the gateway); one that takes the request
// and hangs up before answering is charged the call's reservation (it may have
// billed it).
func TestUpstreamFailures(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	ln.Close() // nothing listens here now
	hangup := newPlain(t, func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	})
	for _, c := range []struct {
		name, base string
		charged    bool
	}{{"undialable", dead, false}, {"hangs up", hangup, true}} {
		gw, base := serve(t, Config{Anthropic: Upstream{BaseURL: c.base, Key: realKey}, OpenAI: Upstream{BaseURL: c.base + "/v1", Key: realKey}, Prices: testPrices()})
		l := gw.Issue(Grant{Caps: []Cap{{Key: "task:1", RemainingUSD: 1}}})
		code, body, _ := oaCall(t, http.DefaultTransport, base, "/v1/messages", l.Credential(), map[string]any{"model": sonnet, "max_tokens": 100})
		if code != 502 || !strings.Contains(body, `"api_error"`) {
			t.Fatalf("%s: %d %s", c.name, code, body)
		}
		code, body, _ = oaCall(t, http.DefaultTransport, base, "/v1/responses", l.Credential(), map[string]any{"model": gpt, "max_output_tokens": 100})
		if code != 502 || !strings.Contains(body, `"server_error"`) {
			t.Fatalf("%s: %d %s", c.name, code, body)
		}
		m := l.Revoke()
		if charged := m.CostUSD > 0; charged != c.charged || (m.Calls == 2) != c.charged {
			t.Fatalf("%s: metered %+v, want charged %v", c.name, m, c.charged)
		}
		if c.charged && (m.Models[sonnet].Estimated != 1 || m.Models[gpt].Estimated != 1) {
			t.Fatalf("%s: %+v", c.name, m)
		}
	}
}

// TestBadRequestsRefused: a body over the limit or not JSON is refused 400 in the
// provider's shape and counted, and reaches no upstream.
func TestBadRequestsRefused(t *testing.T) {
	up := newScripted(t, script{In: 1, Out: 1})
	cfg := up.config()
	cfg.MaxRequestBytes = 1000
	gw, base := serve(t, cfg)
	l := gw.Issue(Grant{})
	for _, body := range []any{map[string]any{"model": sonnet, "pad": strings.Repeat("x", 2000)}, "not an object", map[string]any{"max_tokens": 5}} {
		code, got, _ := oaCall(t, http.DefaultTransport, base, "/v1/messages", l.Credential(), body)
		if code != 400 || !strings.Contains(got, `"invalid_request_error"`) {
			t.Fatalf("%v: %d %s", body, code, got)
		}
	}
	if m := l.Revoke(); m.Refused != 3 || m.BudgetRefused != 0 || up.count() != 0 {
		t.Fatalf("metered %+v, upstream %d", m, up.count())
	}
}

// TestConfigProblems: New says what is wrong with a configuration.
func TestConfigProblems(t *testing.T) {
	for want, cfg := range map[string]Config{
		"not an http(s) URL": {Anthropic: Upstream{BaseURL: "ftp://x", Key: "k"}},
		"no key":             {OpenAI: Upstream{BaseURL: "https://api.openai.com/v1"}},
		"regular expression": {Prices: []models.ModelPrice{{Pattern: "("}}},
	} {
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%+v: %v, want %q", cfg, err, want)
		}
	}
}

// TestRevokeDoesNotWaitOnUploads: a client that sends half a body and stalls does
// not hold Revoke up (the read of a body still arriving ends with the credential),
// and the call is refused as unauthenticated, never having reached the upstream.
func TestRevokeDoesNotWaitOnUploads(t *testing.T) {
	up := newScripted(t, script{In: 1, Out: 1})
	gw, base := serve(t, up.config())
	l := gw.Issue(Grant{})
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"model":"` + gpt + `","input":"hi"}`
	fmt.Fprintf(conn, "POST /v1/responses HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		l.Credential(), len(body), body[:10])
	time.Sleep(50 * time.Millisecond) // the gateway is now reading the body
	done := make(chan struct{})
	go func() { l.Revoke(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("Revoke waited on a stalled upload")
	}
	fmt.Fprint(conn, body[10:])
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || res.StatusCode != 401 || up.count() != 0 {
		t.Fatalf("the completed call: %v %v, upstream %d", res, err, up.count())
	}
}
