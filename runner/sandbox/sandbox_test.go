//go:build linux && (amd64 || arm64)

package sandbox_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/runner/sandbox"
)

var (
	probeOnce sync.Once
	probeBin  string
	probeErr  error
)

// buildProbe builds the hostile worker once per test binary, into a directory the
// sandbox lets it execute from.
func buildProbe(t testing.TB) string {
	t.Helper()
	probeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "cs-probe-")
		if err != nil {
			probeErr = err
			return
		}
		probeBin = filepath.Join(dir, "probe")
		out, err := exec.Command("go", "build", "-o", probeBin, "./internal/probe").CombinedOutput()
		if err != nil {
			probeErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	if probeErr != nil {
		t.Fatal(probeErr)
	}
	return probeBin
}

// layout is a data dir as the runner lays it out: the database, two task workspaces,
// an attempt's temp dir and an agent's home.
type layout struct {
	data, db, ws, other, tmp, home string
}

func newLayout(t *testing.T) layout {
	t.Helper()
	data := t.TempDir()
	l := layout{
		data: data, db: filepath.Join(data, "countersign.db"),
		ws: filepath.Join(data, "tasks", "1"), other: filepath.Join(data, "tasks", "2"),
		tmp: filepath.Join(data, "tmp", "1-1"), home: filepath.Join(data, "agents", "quinn", "home"),
	}
	for _, d := range []string{l.ws, l.other, l.tmp, l.home} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(l.db, []byte("SQLite format 3\x00 the judge's records"), 0o640); err != nil {
		t.Fatal(err)
	}
	return l
}

func (l layout) policy(probe string, ports ...uint16) sandbox.Policy {
	return sandbox.Policy{
		ReadExec:   append(sandbox.SystemReadPaths(os.Getenv("PATH")), filepath.Dir(probe)),
		ReadWrite:  []string{l.ws, l.tmp, l.home},
		ConnectTCP: ports,
	}
}

// runProbe runs the probe under sb with p and returns its verdict per line.
func runProbe(t *testing.T, sb *sandbox.Sandbox, p sandbox.Policy, l layout, args ...string) map[string]string {
	t.Helper()
	probe := buildProbe(t)
	args = append([]string{"-db", l.db, "-pid", fmt.Sprint(os.Getpid()), "-other", l.other}, args...)
	cmd := exec.Command(probe, args...)
	cmd.Dir = l.ws
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + l.home, "TMPDIR=" + l.tmp, "COUNTERSIGN_TOKEN=cs_attempt"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := sb.Start(cmd, p, func() { done <- cmd.Wait() }); err != nil {
		t.Fatalf("start: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("probe: %v\n%s", err, out.String())
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		name, verdict, _ := strings.Cut(line, ": ")
		got[name] = verdict
	}
	t.Logf("probe:\n%s", out.String())
	return got
}

func requirePostgres(t *testing.T) {
	t.Helper()
	c, err := net.Dial("tcp", "127.0.0.1:5432")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is required in CI: %v", err)
		}
		t.Skipf("no PostgreSQL on 127.0.0.1:5432: %v", err)
	}
	c.Close()
}

func probeOn(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	sb := sandbox.Probe(sandbox.ModeOn)
	if !sb.Ready() {
		t.Fatalf("the sandbox must work on this machine: %s", sb.Status())
	}
	return sb
}

// The judge's ways in that a worker must not have, and the ways it needs, measured
// with a hostile probe, and the same probe with the sandbox off, so each assertion is
// shown to be able to fail.
func TestHostileProbe(t *testing.T) {
	requirePostgres(t)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer cs_attempt" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer api.Close()
	_, portStr, _ := net.SplitHostPort(strings.TrimPrefix(api.URL, "http://"))
	var port uint16
	fmt.Sscan(portStr, &port)

	escapes := []string{"read-db", "read-environ", "signal-server", "list-other-workspace", "write-tmp",
		"write-parent", "tcp-postgres", "mptcp-postgres", "tfo-postgres", "unix-postgres"}
	needs := []string{"write-workspace", "write-tmpdir", "write-home", "run-sh", "run-git", "go-test", "api"}
	if os.Geteuid() == 0 {
		escapes = append(escapes, "capabilities")
	}

	t.Run("confined", func(t *testing.T) {
		l := newLayout(t)
		got := runProbe(t, probeOn(t), l.policy(buildProbe(t), port), l, "-api", api.URL, "-go-test")
		for _, name := range escapes {
			if !strings.HasPrefix(got[name], "denied") {
				t.Errorf("%s: %q, want denied", name, got[name])
			}
		}
		for _, name := range needs {
			if got[name] != "ok" {
				t.Errorf("%s: %q, want ok", name, got[name])
			}
		}
	})
	t.Run("sandbox off", func(t *testing.T) {
		l := newLayout(t)
		got := runProbe(t, sandbox.Probe(sandbox.ModeOff), l.policy(buildProbe(t), port), l, "-api", api.URL)
		for _, name := range append(escapes, needs[:len(needs)-2]...) {
			if name == "mptcp-postgres" && strings.Contains(got[name], "protocol not supported") {
				continue // a kernel without Multipath TCP
			}
			if got[name] != "ok" {
				t.Errorf("%s: %q, want ok with the sandbox off", name, got[name])
			}
		}
	})
}

// A run that may open unix sockets still cannot reach PostgreSQL's: /run, /var/run and
// /tmp are empty in its mount namespace, while its own paths below /tmp stay.
func TestUnixSocketsHidden(t *testing.T) {
	requirePostgres(t)
	if os.Geteuid() != 0 {
		t.Skip("mount namespaces need the runner to hold CAP_SYS_ADMIN")
	}
	l := newLayout(t) // under /tmp: its paths must be mounted back
	p := l.policy(buildProbe(t))
	p.AllowUnix = true
	got := runProbe(t, probeOn(t), p, l)
	if !strings.HasPrefix(got["unix-postgres"], "denied") {
		t.Errorf("unix-postgres: %q, want denied", got["unix-postgres"])
	}
	for _, name := range []string{"write-workspace", "write-tmpdir", "write-home"} {
		if got[name] != "ok" {
			t.Errorf("%s: %q, want ok", name, got[name])
		}
	}
}

// The Claude preset's needs, confined: ~/.claude in the agent's home, and a connection
// to port 443 that the sandbox lets through (nothing listens here, so the kernel
// answers "connection refused"; a port the policy does not allow gets "permission
// denied" before any packet leaves).
func TestClaudePresetNeeds(t *testing.T) {
	l := newLayout(t)
	got := runProbe(t, probeOn(t), l.policy(buildProbe(t), 443), l, "-connect", "443")
	if !strings.Contains(got["connect-allowed-port"], "connection refused") {
		t.Errorf("connect to 443: %q, want it let through (connection refused)", got["connect-allowed-port"])
	}
	if got["claude-home"] != "ok" {
		t.Errorf("~/.claude: %q", got["claude-home"])
	}
	got = runProbe(t, probeOn(t), l.policy(buildProbe(t)), l, "-connect", "443")
	if !strings.Contains(got["connect-allowed-port"], "permission denied") {
		t.Errorf("connect to 443 without it in the policy: %q, want permission denied", got["connect-allowed-port"])
	}
}

func TestStatus(t *testing.T) {
	if s := sandbox.Probe(sandbox.ModeOff).Status(); !strings.Contains(s, "off") {
		t.Errorf("off status: %q", s)
	}
	sb := probeOn(t)
	if sb.ABI() < 1 || !strings.Contains(sb.Status(), fmt.Sprintf("Landlock ABI %d", sb.ABI())) {
		t.Errorf("status %q, ABI %d", sb.Status(), sb.ABI())
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, p := range []sandbox.Policy{{ReadWrite: []string{"rel/dir"}}, {ReadWrite: []string{"/"}}, {ReadExec: []string{"/a\x00b"}}} {
		if p.Validate() == nil {
			t.Errorf("%+v: want an error", p)
		}
	}
	if err := (sandbox.Policy{ReadWrite: []string{"/data/tasks/1"}, ReadExec: []string{"/usr"}}).Validate(); err != nil {
		t.Error(err)
	}
}

// A version manager's shim on PATH (pyenv's python3 here) runs confined: its install
// beside the shims directory is readable.
func TestShimmedToolRunsConfined(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	l := newLayout(t)
	cmd := exec.Command(py, "-c", "print(6*7)")
	cmd.Dir = l.ws
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + l.home, "TMPDIR=" + l.tmp}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := probeOn(t).Start(cmd, sandbox.Policy{ReadExec: sandbox.SystemReadPaths(os.Getenv("PATH")), ReadWrite: []string{l.ws, l.tmp, l.home}}, func() { done <- cmd.Wait() }); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || strings.TrimSpace(out.String()) != "42" {
		t.Fatalf("%s confined: %v: %s", py, err, out.String())
	}
}

// A runner that cannot make a mount namespace refuses to run an agent allowed unix
// sockets, rather than leave PostgreSQL's socket in reach.
func TestUnixSocketsNeedAMountNamespace(t *testing.T) {
	sb := sandbox.WithoutCapSysAdmin(probeOn(t))
	l := newLayout(t)
	cmd := exec.Command("/bin/true")
	cmd.Dir = l.ws
	p := l.policy(buildProbe(t))
	p.AllowUnix = true
	err := sb.Start(cmd, p, func() { _ = cmd.Wait() })
	if err == nil || !strings.Contains(err.Error(), "unix sockets are allowed only") {
		t.Fatalf("start: %v, want a refusal", err)
	}
	p.AllowUnix = false
	again := exec.Command("/bin/true")
	again.Dir = l.ws
	done := make(chan error, 1)
	if err := sb.Start(again, p, func() { done <- again.Wait() }); err != nil {
		t.Fatalf("without unix sockets: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// An agent granted a hierarchy that holds the data dir (an admin's --sandbox-read of
// /srv, say) still cannot read the database: the grant is narrowed around it.
func TestProtectedDataDir(t *testing.T) {
	l := newLayout(t)
	p := l.policy(buildProbe(t))
	p.ReadExec = append(p.ReadExec, filepath.Dir(l.data)) // contains the data dir
	open := runProbe(t, probeOn(t), p, l)
	if open["read-db"] != "ok" {
		t.Fatalf("without Protect the broad grant should reach the database: %q", open["read-db"])
	}
	got := runProbe(t, sandbox.Probe(sandbox.ModeOn).Protect(l.data), p, l)
	if !strings.HasPrefix(got["read-db"], "denied") || !strings.HasPrefix(got["list-other-workspace"], "denied") {
		t.Errorf("protected data dir: read-db %q, list-other-workspace %q", got["read-db"], got["list-other-workspace"])
	}
	if got["write-workspace"] != "ok" || got["write-home"] != "ok" {
		t.Errorf("grants inside the data dir: workspace %q, home %q", got["write-workspace"], got["write-home"])
	}
}
