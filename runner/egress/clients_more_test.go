package egress

import (
	"net/http"
	"os/exec"
	"strings"
	"testing"
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
