package gateway

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServiceListeners: the service serves on its address and on a unix socket
// handed to it; Stop closes both and is idempotent; Start after Stop fails.
func TestServiceListeners(t *testing.T) {
	up := newScripted(t, script{In: 3, Out: 2})
	gw, err := New(up.config())
	if err != nil {
		t.Fatal(err)
	}
	svc := NewService(gw, "127.0.0.1:0")
	ctx := context.Background()
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "gw.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Serve(ln); err != nil {
		t.Fatal(err)
	}
	l := gw.Issue(Grant{})
	overUnix := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}
	body := map[string]any{"model": gpt, "input": "hi"}
	for _, rt := range []http.RoundTripper{http.DefaultTransport, overUnix} {
		if code, got, _ := oaCall(t, rt, "http://"+svc.Addr(), "/v1/responses", l.Credential(), body); code != 200 {
			t.Fatalf("%d %s", code, got)
		}
	}
	wantTokens(t, l.Revoke(), gpt, script{In: 3, Out: 2}, 2)
	stopCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := svc.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	if err := svc.Stop(stopCtx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := net.Dial("unix", sock); err == nil {
		t.Fatal("the unix socket still answers after Stop")
	}
	if err := svc.Start(ctx); err == nil {
		t.Fatal("Start after Stop succeeded")
	}
}

// TestServiceStopBeforeStart: a service stopped before it started refuses to
// start and closes a listener handed to it; a second Start is refused too.
func TestServiceStopBeforeStart(t *testing.T) {
	gw, err := New(newScripted(t, script{}).config())
	if err != nil {
		t.Fatal(err)
	}
	twice := NewService(gw, "127.0.0.1:0")
	if err := twice.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := twice.Start(context.Background()); err == nil {
		t.Fatal("a running service started again")
	}
	_ = twice.Stop(context.Background())
	svc := NewService(gw, "127.0.0.1:0")
	if err := svc.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(context.Background()); err == nil {
		t.Fatal("a service stopped before Start started")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Serve(ln); err == nil {
		t.Fatal("a stopped service served a listener")
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Fatal("the refused listener still accepts")
	}
}

// TestRoutes: HEAD / answers without a credential (Claude Code's reachability
// check); endpoints the gateway could not meter (batches, files) are 404 in the
// provider's shape even with a live credential, and reach no upstream.
func TestRoutes(t *testing.T) {
	up := newScripted(t, script{In: 3, Out: 2})
	gw, base := serve(t, up.config())
	if res, err := http.Head(base + "/"); err != nil || res.StatusCode != 200 {
		t.Fatalf("HEAD /: %v %v", res, err)
	}
	l := gw.Issue(Grant{})
	for path, want := range map[string]string{"/v1/messages/batches": `"not_found_error"`, "/v1/files": `"unknown_url"`} {
		code, got, _ := oaCall(t, http.DefaultTransport, base, path, l.Credential(), map[string]any{"model": sonnet})
		if code != 404 || !strings.Contains(got, want) {
			t.Fatalf("%s: %d %s", path, code, got)
		}
	}
	code, got, _ := oaCall(t, http.DefaultTransport, base, "/v1/responses", l.Credential(), map[string]any{"model": gpt, "background": true})
	if code != 400 || !strings.Contains(got, "background") {
		t.Fatalf("background response: %d %s", code, got)
	}
	if up.count() != 0 {
		t.Fatalf("upstream got %d calls", up.count())
	}
}
