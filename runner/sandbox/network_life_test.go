//go:build linux && (amd64 || arm64)

package sandbox_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/runner/sandbox"
)

// openFDs counts the runner's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// socketOf names the socket behind a listener as /proc/self/fd shows it
// ("socket:[inode]"), so the test can look for that very socket in the descriptor
// table rather than infer it from a count that other goroutines' connections move.
func socketOf(t *testing.T, ln net.Listener) string {
	t.Helper()
	sc, ok := ln.(syscall.Conn)
	if !ok {
		t.Fatalf("listener %T has no file descriptor", ln)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var name string
	var readErr error
	if err := raw.Control(func(fd uintptr) { name, readErr = os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)) }); err != nil {
		t.Fatal(err)
	}
	if readErr != nil {
		t.Fatal(readErr)
	}
	return name
}

// settle waits up to 5s for the runner to hold no more descriptors than before and
// none of the listeners' sockets (the HTTP server closes its side of the probe's
// connection on its own time), and returns the count and the sockets still open.
func settle(t *testing.T, listeners []string, before int) (after int, still []string) {
	t.Helper()
	leaked := func() (out []string) {
		open := openSockets(t)
		for _, s := range listeners {
			if open[s] {
				out = append(out, s)
			}
		}
		return out
	}
	after, still = openFDs(t), leaked()
	for deadline := time.Now().Add(5 * time.Second); (after > before || len(still) > 0) && time.Now().Before(deadline); after, still = openFDs(t), leaked() {
		time.Sleep(10 * time.Millisecond)
	}
	return after, still
}

// openSockets is the set of sockets the runner's descriptors refer to.
func openSockets(t *testing.T) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]bool{}
	for _, e := range ents {
		if name, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(name, "socket:") {
			open[name] = true
		}
	}
	return open
}

// A run reaches the ports served in its namespace (a line server on 80, an HTTP API
// on 8080 that checks the run's token). The listeners are the runner's file
// descriptors while the run lasts and are closed once it ends: every Accept fails with
// net.ErrClosed, neither listener's socket is in the runner's descriptor table any
// more (the check is shown able to see them: both are there while the run lasts), and
// the runner holds no more descriptors than before the run. The sockets are named, not
// counted: the HTTP server closes its side of a connection on its own time, so a bare
// count moves by one either way under load.
func TestNetworkListenersClosed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the network namespace needs the runner to hold CAP_SYS_ADMIN")
	}
	sb := probeOn(t)
	l := newLayout(t)
	probe := buildProbe(t)
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer cs_attempt" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	})
	run := func() (listeners []string, during map[string]bool) {
		ended := make(chan error, 2)
		p := l.policy(probe)
		p.Network = &sandbox.NetworkPolicy{Ports: []uint16{80, 8080}, OnListen: func(port uint16, ln net.Listener) {
			listeners = append(listeners, socketOf(t, ln))
			if port == 8080 { // an API, as the runner forwards it
				go func() { ended <- http.Serve(ln, api) }()
				return
			}
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						ended <- err
						return
					}
					c.Write([]byte("inside\n"))
					c.Close()
				}
			}()
		}}
		cmd := exec.Command(probe, "-net-only", "-reach", "web=tcp:127.0.0.1:80", "-api", "http://127.0.0.1:8080/")
		cmd.Env = []string{"COUNTERSIGN_TOKEN=cs_attempt"}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		done, release := make(chan error, 1), make(chan struct{})
		if err := sb.Start(cmd, p, func() { done <- cmd.Wait(); <-release }); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil || !strings.Contains(out.String(), "web: ok: inside") || !strings.Contains(out.String(), "api: ok") {
			t.Fatalf("probe: %v\n%s", err, out.String())
		}
		during = openSockets(t)
		close(release) // whileRunning returns: the run is over
		for range 2 {
			select {
			case err := <-ended:
				if !errors.Is(err, net.ErrClosed) {
					t.Fatalf("accept ended with %v, want net.ErrClosed", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("a listener is still open 10s after its run ended")
			}
		}
		return listeners, during
	}
	run() // the first run opens what the runtime keeps (the poller)
	before := openFDs(t)
	for i := range 3 {
		listeners, during := run()
		if len(listeners) != 2 {
			t.Fatalf("run %d: %d listeners handed over, want 2", i, len(listeners))
		}
		for _, s := range listeners {
			if !during[s] {
				t.Errorf("run %d: listener %s is not among the descriptors during the run: the check does not see it", i, s)
			}
		}
		after, still := settle(t, listeners, before)
		t.Logf("run %d: %d descriptors before, %d after", i, before, after)
		if len(still) > 0 {
			t.Errorf("run %d: listeners %v still open after the run", i, still)
		}
		if after > before {
			t.Errorf("run %d: %d descriptors after the run, %d before: something leaked", i, after, before)
		}
	}
}

// Where the runner cannot make a network namespace (no CAP_SYS_ADMIN here) a run that
// asks for one is refused with ErrNoNetworkIsolation, and NetworkIsolation and Status
// say why; with the sandbox off the Network is ignored (nothing is served, no
// namespace is made) and NetworkIsolation says so.
func TestNetworkRefusedWithoutIsolation(t *testing.T) {
	sb := sandbox.WithoutCapSysAdmin(probeOn(t))
	ok, why := sb.NetworkIsolation()
	if ok || !strings.Contains(why, "CAP_SYS_ADMIN") {
		t.Fatalf("NetworkIsolation() = %v, %q", ok, why)
	}
	if !strings.Contains(sb.Status(), "no private network namespace") {
		t.Errorf("status %q does not say runs get no private network", sb.Status())
	}
	l := newLayout(t)
	served := false
	p := l.policy(buildProbe(t))
	p.Network = &sandbox.NetworkPolicy{Ports: []uint16{8080}, OnListen: func(uint16, net.Listener) { served = true }}
	cmd := exec.Command("/bin/true")
	if err := sb.Start(cmd, p, func() { _ = cmd.Wait() }); !errors.Is(err, sandbox.ErrNoNetworkIsolation) || served {
		t.Fatalf("start: %v (served %v), want ErrNoNetworkIsolation", err, served)
	}
	p.Network = nil // the weaker mode the runner may choose instead
	cmd = exec.Command("/bin/true")
	done := make(chan error, 1)
	if err := sb.Start(cmd, p, func() { done <- cmd.Wait() }); err != nil || <-done != nil {
		t.Fatalf("without a Network: %v", err)
	}

	off := sandbox.Probe(sandbox.ModeOff)
	if ok, why := off.NetworkIsolation(); ok || !strings.Contains(why, "sandbox off") {
		t.Errorf("off: NetworkIsolation() = %v, %q", ok, why)
	}
	p.Network = &sandbox.NetworkPolicy{Ports: []uint16{8080}, OnListen: func(uint16, net.Listener) { served = true }}
	cmd = exec.Command("/bin/true")
	if err := off.Start(cmd, p, func() { done <- cmd.Wait() }); err != nil || <-done != nil || served {
		t.Fatalf("off: %v, served %v", err, served)
	}
}

func TestNetworkPolicy(t *testing.T) {
	serve := func(uint16, net.Listener) {}
	for _, n := range []*sandbox.NetworkPolicy{{Ports: []uint16{0}, OnListen: serve}, {Ports: []uint16{443}}} {
		if err := (sandbox.Policy{Network: n}).Validate(); err == nil {
			t.Errorf("%+v: want an error", *n)
		}
	}
	p := sandbox.Policy{ConnectTCP: []uint16{443}, Network: &sandbox.NetworkPolicy{Ports: []uint16{8080, 443, 8080}, OnListen: serve}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(p.Describe(), "\n")
	if !strings.Contains(got, "connect only to 127.0.0.1 ports 443, 8080 (served by Countersign) in a private network namespace") {
		t.Errorf("describe: %s", got)
	}
	if none := (sandbox.Policy{Network: &sandbox.NetworkPolicy{}}).Describe(); !strings.Contains(strings.Join(none, "\n"), "no network") {
		t.Errorf("describe without ports: %q", none)
	}
}

// Measured in a real process without CAP_SYS_ADMIN (this test binary re-run under
// setpriv with it dropped from every set, as root of the host otherwise): the sandbox
// is ready through the user-namespace path but gives runs no network namespace, says
// why and refuses a Network; and the ways a runner might make one without the
// capability fail (see noCapMeasures). Re-run as root of a user namespace of its own
// (unshare --user --map-root-user), the remedy the refusal names, the same process
// without CAP_SYS_ADMIN on the host gives runs their private network: TestPrivateNetwork
// and TestNetworkListenersClosed pass there.
func TestNetworkWithoutCapSysAdmin(t *testing.T) {
	if os.Getenv(noCapEnv) != "" {
		t.Skip("already the re-run")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to drop CAP_SYS_ADMIN alone")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("no setpriv (util-linux) to drop CAP_SYS_ADMIN")
	}
	drop := []string{"--bounding-set=-sys_admin", "--inh-caps=-sys_admin", "--"}
	for _, c := range []struct {
		name, run string
		pre       []string
	}{
		{"no CAP_SYS_ADMIN", "^TestNetworkNoCapHelper$", nil},
		{"root of a user namespace", "^(TestPrivateNetwork|TestNetworkListenersClosed)$", []string{"unshare", "--user", "--map-root-user", "--"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(append(append([]string{}, drop...), c.pre...), os.Args[0], "-test.run", c.run, "-test.v", "-test.count=1")
			cmd := exec.Command(setpriv, args...)
			cmd.Env = append(os.Environ(), noCapEnv+"=1")
			out, err := cmd.CombinedOutput()
			t.Logf("%s:\n%s", strings.Join(cmd.Args, " "), out)
			if err != nil || !strings.Contains(string(out), "--- PASS") || strings.Contains(string(out), "--- SKIP") {
				t.Fatalf("the re-run failed or skipped: %v", err)
			}
		})
	}
}
