package egress

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hello answers every request with a fixed body, so a client's output
// proves it reached the test server through the proxy.
var hello = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.WriteString(w, "hello from "+r.Host+r.URL.Path)
})

func curl(t *testing.T, proxy, caFile, target string) (string, error) {
	t.Helper()
	cmd := exec.Command("curl", "-q", "-sS", "--max-time", "20", "--cacert", caFile, target)
	cmd.Env = cleanEnv("HTTPS_PROXY=http://"+proxy, "https_proxy=http://"+proxy, "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestCurlLiteralIPAllowed: curl with HTTPS_PROXY reaches a TLS server
// whose literal 127.0.0.1:port is listed; the entry shows the tunnel.
func TestCurlLiteralIPAllowed(t *testing.T) {
	ca := newTestCA(t)
	srv := ca.startTLS(t, hello)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	log := newEntries()
	_, proxy := startProxy(t, Config{Allow: []string{srv.Listener.Addr().String()}, Sink: log.sink})

	out, err := curl(t, proxy, ca.caFile, srv.URL+"/lit")
	if err != nil || !strings.Contains(out, "hello from 127.0.0.1:") {
		t.Fatalf("curl through proxy: err=%v out=%q", err, out)
	}
	e := log.next(t)
	if !e.Allowed || e.Method != "CONNECT" || e.Host != "127.0.0.1" || e.Port != port || e.Status != 200 {
		t.Fatalf("entry = %+v", e)
	}
	if e.Up == 0 || e.Down == 0 || e.Addr != srv.Listener.Addr().String() {
		t.Fatalf("entry should show the dialed address and TLS bytes both ways: %+v", e)
	}
}

// TestCurlNameAllowedAndDenied: curl reaches an allowed name (resolved by
// an injected resolver to a public-looking address that the injected
// dialer routes to the test server), and is refused with 403 for a name
// that is not listed.
func TestCurlNameAllowedAndDenied(t *testing.T) {
	ca := newTestCA(t)
	srv := ca.startTLS(t, hello)
	res := newResolver("registry.test", "203.0.113.10", "evil.test", "203.0.113.66")
	dial := newDialer("203.0.113.10:443", srv.Listener.Addr().String())
	log := newEntries()
	_, proxy := startProxy(t, Config{
		Allow: []string{"REGISTRY.test."}, Sink: log.sink, Resolver: res, Dialer: dial,
	})

	out, err := curl(t, proxy, ca.caFile, "https://registry.test/pkg")
	if err != nil || out != "hello from registry.test/pkg" {
		t.Fatalf("allowed name: err=%v out=%q", err, out)
	}
	if e := log.next(t); !e.Allowed || e.Host != "registry.test" || e.Addr != "203.0.113.10:443" {
		t.Fatalf("allowed entry = %+v", e)
	}

	out, err = curl(t, proxy, ca.caFile, "https://evil.test/steal")
	if err == nil || !strings.Contains(out, "403") {
		t.Fatalf("denied name: curl should fail with the proxy's 403; err=%v out=%q", err, out)
	}
	e := log.next(t)
	if e.Allowed || e.Status != 403 || !strings.Contains(e.Reason, "evil.test is not on this run's egress allowlist") {
		t.Fatalf("denied entry = %+v", e)
	}
	if got := dial.Dialed(); len(got) != 1 || res.calls["evil.test"] != 0 {
		t.Fatalf("a denied name must be neither resolved nor dialed: dialed %v, lookups %v", got, res.calls)
	}
}

// TestGoClientConnectAndForward: Go's net/http with Proxy set reaches an
// allowed HTTPS name through CONNECT and an allowed plain-HTTP name
// through the forwarder, which strips proxy headers and adds none.
func TestGoClientConnectAndForward(t *testing.T) {
	ca := newTestCA(t)
	tlsSrv := ca.startTLS(t, hello)
	var seen http.Header
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Clone()
		body, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, r.Method+" "+r.Host+r.URL.RequestURI()+" "+string(body))
	}))
	t.Cleanup(plain.Close)
	res := newResolver("api.mirror.test", "203.0.113.10", "plain.test", "203.0.113.20")
	dial := newDialer("203.0.113.10:443", tlsSrv.Listener.Addr().String(),
		"203.0.113.20:80", plain.Listener.Addr().String())
	log := newEntries()
	_, proxy := startProxy(t, Config{
		Allow: []string{"*.mirror.test", "plain.test:80"}, Sink: log.sink, Resolver: res, Dialer: dial,
	})
	pu, _ := url.Parse("http://" + proxy)
	client := &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: ca.pool},
	}}

	body := get(t, client, "https://api.mirror.test/v1")
	if body != "hello from api.mirror.test/v1" {
		t.Fatalf("https via CONNECT: %q", body)
	}
	client.CloseIdleConnections() // the entry comes when the tunnel ends
	if e := log.next(t); !e.Allowed || e.Method != "CONNECT" || e.Host != "api.mirror.test" {
		t.Fatalf("CONNECT entry = %+v", e)
	}

	resp, err := client.Post("http://plain.test/form?q=1", "text/plain", strings.NewReader("payload"))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != "POST plain.test/form?q=1 payload" {
		t.Fatalf("plain http via forwarder: %q", got)
	}
	for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "X-Forwarded-For", "Forwarded"} {
		if seen.Get(h) != "" {
			t.Errorf("upstream saw %s: %q", h, seen.Get(h))
		}
	}
	e := log.next(t)
	if !e.Allowed || e.Method != "POST" || e.Host != "plain.test" || e.Port != 80 || e.Status != 200 {
		t.Fatalf("forward entry = %+v", e)
	}
	if e.Up < int64(len("payload")) || e.Down < int64(len(got)) {
		t.Fatalf("forward entry bytes too small: %+v", e)
	}
}

func get(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestGitCloneOverHTTPS: git clones over https through the proxy (git's
// libcurl honours https_proxy) from git http-backend behind TLS.
func TestGitCloneOverHTTPS(t *testing.T) {
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skipf("git not available: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend")
	root := t.TempDir()
	src := filepath.Join(t.TempDir(), "src")
	home := t.TempDir()
	env := cleanEnv("HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	run := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run(root, "init", "-q", src)
	if err := os.WriteFile(filepath.Join(src, "README"), []byte("through the proxy\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(src, "add", "README")
	run(src, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
	run(root, "clone", "-q", "--bare", src, filepath.Join(root, "repo.git"))

	ca := newTestCA(t)
	srv := ca.startTLS(t, &cgi.Handler{Path: backend, Env: []string{
		"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1",
	}})
	log := newEntries()
	_, proxy := startProxy(t, Config{
		Allow: []string{"git.test"}, Sink: log.sink, Resolver: newResolver("git.test", "203.0.113.30"),
		Dialer: newDialer("203.0.113.30:443", srv.Listener.Addr().String()),
	})
	dst := filepath.Join(t.TempDir(), "dst")
	env = append(env, "https_proxy=http://"+proxy, "GIT_SSL_CAINFO="+ca.caFile)
	run(home, "clone", "-q", "https://git.test/repo.git", dst)
	b, err := os.ReadFile(filepath.Join(dst, "README"))
	if err != nil || !bytes.Equal(b, []byte("through the proxy\n")) {
		t.Fatalf("cloned README: %q %v", b, err)
	}
	if e := log.next(t); !e.Allowed || e.Host != "git.test" || e.Down == 0 {
		t.Fatalf("git entry = %+v", e)
	}
}
