//go:build linux && (amd64 || arm64)

package sandbox_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/countersign/countersign/runner/sandbox"
	"golang.org/x/sys/unix"
)

// noCapEnv marks the re-run of this test binary without CAP_SYS_ADMIN.
const noCapEnv = "COUNTERSIGN_SANDBOX_NOCAP_RERUN"

// Run only by TestNetworkWithoutCapSysAdmin, in a process without CAP_SYS_ADMIN: the
// sandbox refuses a Network and says why, and each way a runner might make a network
// namespace with loopback listeners without the capability fails here (noCapMeasures).
func TestNetworkNoCapHelper(t *testing.T) {
	if os.Getenv(noCapEnv) == "" {
		t.Skip("run by TestNetworkWithoutCapSysAdmin")
	}
	if capEff(t)&(1<<unix.CAP_SYS_ADMIN) != 0 {
		t.Fatal("the re-run still holds CAP_SYS_ADMIN")
	}
	sb := sandbox.Probe(sandbox.ModeOn)
	if !sb.Ready() || !sb.KillsEscapees() {
		t.Fatalf("without CAP_SYS_ADMIN the sandbox should be ready through user namespaces: %s", sb.Status())
	}
	ok, why := sb.NetworkIsolation()
	t.Logf("NetworkIsolation() = %v, %q", ok, why)
	if ok || !strings.Contains(why, "CAP_SYS_ADMIN") {
		t.Fatal("want no network isolation, for want of CAP_SYS_ADMIN")
	}
	cmd := exec.Command("/bin/true")
	p := sandbox.Policy{ReadExec: sandbox.SystemReadPaths(os.Getenv("PATH")), Network: &sandbox.NetworkPolicy{}}
	if err := sb.Start(cmd, p, func() { _ = cmd.Wait() }); !errors.Is(err, sandbox.ErrNoNetworkIsolation) {
		t.Fatalf("start with a Network: %v, want ErrNoNetworkIsolation", err)
	}
	for _, m := range noCapMeasures(t) {
		t.Log(m)
	}
}

// noCapMeasures tries, without CAP_SYS_ADMIN, each way to a network namespace with a
// listener in it, fails the test if one works, and returns what each got.
func noCapMeasures(t *testing.T) []string {
	var out []string
	// 1. What a confining thread does as root: refused.
	if err := onThrowawayThread(func() error { return unix.Unshare(unix.CLONE_NEWNET) }); !errors.Is(err, unix.EPERM) {
		t.Errorf("unshare(CLONE_NEWNET) on a thread: %v, want EPERM", err)
	}
	out = append(out, "unshare(CLONE_NEWNET) on a thread: EPERM")
	// 2. A user namespace first, as the run's own clone has: refused to a threaded process.
	if err := onThrowawayThread(func() error { return unix.Unshare(unix.CLONE_NEWUSER | unix.CLONE_NEWNET) }); !errors.Is(err, unix.EINVAL) {
		t.Errorf("unshare(CLONE_NEWUSER|CLONE_NEWNET) on a thread: %v, want EINVAL", err)
	}
	out = append(out, "unshare(CLONE_NEWUSER|CLONE_NEWNET) on a thread of a threaded process: EINVAL")
	// 3. A run cloned into a user and network namespace of its own (Go's fork runs no
	// code of ours before exec): loopback is down and the run cannot raise it.
	if ip, err := exec.LookPath("ip"); err == nil {
		cmd := exec.Command("/bin/sh", "-c", ip+" -o link show lo; "+ip+" link set lo up")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET}
		b, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(b), "state DOWN") || !strings.Contains(string(b), "Operation not permitted") {
			t.Errorf("ip in a cloned user+network namespace: %v: %s", err, b)
		}
		out = append(out, "in a run cloned with CLONE_NEWUSER|CLONE_NEWNET: "+strings.Join(strings.Fields(string(b)), " "))
	}
	// 4. Joining that namespace from the runner, to listen in it: refused, for the user
	// namespace (threaded) and for the network namespace (no CAP_SYS_ADMIN here).
	sleeper := exec.Command("/bin/sleep", "30")
	sleeper.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET}
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	for _, ns := range []struct {
		name string
		flag int
		want error
	}{{"net", unix.CLONE_NEWNET, unix.EPERM}, {"user", unix.CLONE_NEWUSER, unix.EINVAL}} {
		err := onThrowawayThread(func() error {
			fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/%s", sleeper.Process.Pid, ns.name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			if err := unix.Setns(fd, ns.flag); err != nil {
				return err
			}
			_, err = net.Listen("tcp4", "127.0.0.1:0") // would be the run's
			return err
		})
		if !errors.Is(err, ns.want) {
			t.Errorf("setns into the run's %s namespace: %v, want %v", ns.name, err, ns.want)
		}
		out = append(out, fmt.Sprintf("setns into a cloned run's %s namespace: %v", ns.name, err))
	}
	return out
}

// onThrowawayThread runs f on a locked thread that is never given back (the runtime
// destroys it), since f may have changed the thread's namespaces.
func onThrowawayThread(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		done <- f()
	}()
	return <-done
}

// capEff reads the process's effective capability set.
func capEff(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no CapEff in /proc/self/status")
	return 0
}
