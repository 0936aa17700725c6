package egress

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// pythonGet fetches url with Python's urllib, whose CONNECT comes from
// http.client, the same tunnel code pip's urllib3 uses, with https_proxy
// set in the environment.
const pythonGet = `
import ssl, sys, urllib.request
ctx = ssl.create_default_context(cafile=sys.argv[1])
print(urllib.request.urlopen(sys.argv[2], context=ctx, timeout=20).read().decode(), end="")
`

// TestPythonClient: Python's urllib (pip's stack) through https_proxy.
func TestPythonClient(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	ca := newTestCA(t)
	srv := ca.startTLS(t, hello)
	log := newEntries()
	_, proxy := startProxy(t, Config{
		Allow: []string{"pypi.mirror.test"}, Sink: log.sink,
		Resolver: newResolver("pypi.mirror.test", "203.0.113.50"),
		Dialer:   newDialer("203.0.113.50:443", srv.Listener.Addr().String()),
	})
	cmd := exec.Command("python3", "-c", pythonGet, ca.caFile, "https://pypi.mirror.test/simple/")
	cmd.Env = cleanEnv("https_proxy=http://"+proxy, "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "hello from pypi.mirror.test/simple/" {
		t.Fatalf("python through proxy: %v %q", err, out)
	}
	if e := log.next(t); !e.Allowed || e.Host != "pypi.mirror.test" {
		t.Fatalf("entry = %+v", e)
	}
}

// TestNpmClient: npm view against a fake registry through npm's
// https-proxy setting.
func TestNpmClient(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm not installed")
	}
	ca := newTestCA(t)
	srv := ca.startTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"name":"left-pad","dist-tags":{"latest":"9.9.9"},` +
			`"versions":{"9.9.9":{"name":"left-pad","version":"9.9.9","dist":{"tarball":"https://registry.test/x.tgz"}}}}`))
	}))
	log := newEntries()
	_, proxy := startProxy(t, Config{
		Allow: []string{"registry.test"}, Sink: log.sink,
		Resolver: newResolver("registry.test", "203.0.113.60"),
		Dialer:   newDialer("203.0.113.60:443", srv.Listener.Addr().String()),
	})
	home := t.TempDir()
	cmd := exec.Command("npm", "view", "left-pad", "version", "--registry", "https://registry.test/",
		"--https-proxy", "http://"+proxy, "--cafile", ca.caFile, "--cache", home+"/cache",
		"--userconfig", home+"/npmrc", "--fetch-retries", "0", "--no-update-notifier")
	cmd.Env = cleanEnv("HOME=" + home)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "9.9.9" {
		t.Fatalf("npm through proxy: %v %q", err, out)
	}
	if e := log.next(t); !e.Allowed || e.Host != "registry.test" {
		t.Fatalf("entry = %+v", e)
	}
}

// TestForwardDenied: the plain-HTTP forwarder applies the same policy as
// CONNECT: an unlisted host, a listed host on another port and a name
// resolving to loopback all get 403 from Go's client, and nothing is dialed.
func TestForwardDenied(t *testing.T) {
	res := newResolver("plain.test", "203.0.113.20", "inside.test", "127.0.0.1")
	dial := newDialer()
	log := newEntries()
	_, proxy := startProxy(t, Config{
		Allow: []string{"plain.test:80", "inside.test:80"}, Sink: log.sink, Resolver: res, Dialer: dial,
	})
	pu, _ := url.Parse("http://" + proxy)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	for u, want := range map[string]string{
		"http://evil.test/":       "evil.test is not on this run's egress allowlist",
		"http://plain.test:8080/": "port 8080 is not allowed for plain.test (allowed: 80)",
		"http://inside.test/":     "inside.test resolves to 127.0.0.1, a loopback address",
	} {
		resp, err := client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 403 || !strings.Contains(string(b), want) {
			t.Errorf("GET %s: %d %q", u, resp.StatusCode, b)
		}
		if e := log.next(t); e.Allowed || e.Status != 403 || e.Method != "GET" {
			t.Errorf("GET %s: entry = %+v", u, e)
		}
	}
	if got := dial.Dialed(); len(got) != 0 {
		t.Fatalf("nothing should have been dialed: %v", got)
	}
}

// TestStartContextStops: ending the context given to Start stops the
// proxy: the listener closes.
func TestStartContextStops(t *testing.T) {
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := p.Start(ctx, ln); err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			break // closed without anyone calling Stop
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("listener still accepting 5s after the Start context ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	if err := p.Stop(stop); err != nil {
		t.Fatal(err)
	}
}

// TestStopBeforeStart: a proxy stopped before it started refuses to start and
// leaves the listener to its caller.
func TestStopBeforeStart(t *testing.T) {
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := p.Start(context.Background(), ln); err == nil {
		t.Fatal("a proxy stopped before Start started")
	}
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("the refused listener was closed: %v", err)
	}
	c.Close()
}
