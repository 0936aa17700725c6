//go:build linux && (amd64 || arm64)

package sandbox_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/runner/sandbox"
)

// escapee is a process a run left behind, as the host sees it.
type escapee struct {
	pid    int
	marker string // in its command line: -linger <its pid file>, unique to the test
}

// alive reports whether the escapee still runs. Its command line is the proof of
// identity: a zombie has an empty one and a reused pid another, and both count as gone.
func (e escapee) alive() bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", e.pid))
	return err == nil && bytes.Contains(b, []byte(e.marker))
}

// statIDs returns a process's group and session ids as the host numbers them.
func statIDs(t *testing.T, pid int) (pgrp, sid int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// After the parenthesised command name: state, ppid, pgrp, session.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	pgrp, _ = strconv.Atoi(f[2])
	sid, _ = strconv.Atoi(f[3])
	return pgrp, sid
}

// leaveEscapee runs the probe under sb in escape mode: it starts a process that calls
// setsid and exits. The escapee is checked alive, in a session and group of its own,
// while the probe still runs; leaveEscapee returns it once the probe has been waited
// for, and kills it at the end of the test if it is still there.
func leaveEscapee(t *testing.T, sb *sandbox.Sandbox) escapee {
	t.Helper()
	l := newLayout(t)
	probe := buildProbe(t)
	pidFile := filepath.Join(l.ws, "escapee.pid")
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	output := func() string { b, _ := os.ReadFile(out.Name()); return string(b) }
	cmd := exec.Command(probe, "-escape", pidFile)
	cmd.Dir = l.ws
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + l.home, "TMPDIR=" + l.tmp}
	cmd.Stdout, cmd.Stderr = out, out
	done := make(chan error, 1)
	if err := sb.Start(cmd, l.policy(probe), func() { done <- cmd.Wait() }); err != nil {
		t.Fatalf("start: %v", err)
	}
	leader := cmd.Process.Pid

	var e escapee
	for deadline := time.Now().Add(20 * time.Second); e.pid == 0; time.Sleep(5 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("the probe exited (%v) before its escapee reported:\n%s", err, output())
		default:
		}
		if b, err := os.ReadFile(pidFile); err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("escapee's pid file: %q", b)
			}
			e = escapee{pid: pid, marker: "-linger\x00" + pidFile + "\x00"}
		} else if time.Now().After(deadline) {
			t.Fatalf("no escapee after 20s:\n%s", output())
		}
	}
	t.Cleanup(func() {
		if e.alive() {
			_ = syscall.Kill(e.pid, syscall.SIGKILL)
		}
	})
	if !e.alive() {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", e.pid))
		t.Fatalf("pid %d, as the escapee reported it, is not the escapee (command line %q)", e.pid, cmdline)
	}
	if pgrp, sid := statIDs(t, e.pid); sid != e.pid || pgrp == leader {
		t.Fatalf("the escapee did not leave the run's group %d: group %d, session %d", leader, pgrp, sid)
	}
	if err := os.WriteFile(pidFile+".go", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("probe: %v\n%s", err, output())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the probe has not exited after 30s:\n%s", output())
	}
	return e
}

// A process that leaves its run's process group (setsid) dies with the run: where the
// runner holds CAP_SYS_ADMIN the run is PID 1 of a PID namespace of its own, and
// without it PID 1 of a PID namespace inside a user namespace of its own. With neither
// (the user-namespace path switched off: ProcessGroupOnly), and with the sandbox off,
// the same escapee survives, which shows the check can fail.
func TestEscapeeDiesWithRun(t *testing.T) {
	sb := probeOn(t)
	for _, c := range []struct {
		name, status string
		sb           *sandbox.Sandbox
	}{
		{"PID namespace", "a PID namespace per run", sb},
		{"user namespace without CAP_SYS_ADMIN", "a user namespace with a PID namespace per run", sandbox.WithoutCapSysAdmin(sb)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !c.sb.KillsEscapees() {
				if os.Getenv("CI") == "true" {
					t.Fatalf("CI runs the tests as root on a kernel with user namespaces: runs must kill their escapees (%s)", c.sb.Status())
				}
				t.Skipf("escapees do not die with their run here (%s)", c.sb.Status())
			}
			if !strings.Contains(c.sb.Status(), c.status) {
				t.Errorf("status %q does not say %q", c.sb.Status(), c.status)
			}
			e := leaveEscapee(t, c.sb)
			start := time.Now()
			for deadline := start.Add(2 * time.Second); e.alive(); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("escapee %d still runs 2s after its run ended", e.pid)
				}
			}
			t.Logf("escapee %d gone %v after the run was waited for", e.pid, time.Since(start))
		})
	}
	for _, c := range []struct {
		name string
		sb   *sandbox.Sandbox
	}{
		{"process group only", sandbox.ProcessGroupOnly(sb)},
		{"sandbox off", sandbox.Probe(sandbox.ModeOff)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.sb.KillsEscapees() {
				t.Errorf("KillsEscapees() = true; status %q", c.sb.Status())
			}
			if e := leaveEscapee(t, c.sb); !e.alive() {
				t.Fatalf("escapee %d died with its run, which only a PID namespace does", e.pid)
			}
		})
	}
}

// Where the runner holds no CAP_SYS_ADMIN and the kernel gives it no user namespace,
// the sandbox is unavailable: nothing starts, and the status (/readyz's "sandbox" and
// "reason") says the runner refuses to judge and why.
func TestNoNamespaceRefusesToJudge(t *testing.T) {
	sb := sandbox.WithoutUserNamespaces(probeOn(t))
	if sb.Ready() || sb.KillsEscapees() {
		t.Fatalf("ready without any way to kill escapees: %s", sb.Status())
	}
	for _, want := range []string{"sandbox unavailable, workers do not start", "the runner refuses to judge", "setsid", "no CAP_SYS_ADMIN", "user namespaces"} {
		if !strings.Contains(sb.Status(), want) {
			t.Errorf("status %q lacks %q", sb.Status(), want)
		}
	}
	l := newLayout(t)
	cmd := exec.Command("/bin/true")
	cmd.Dir = l.ws
	if err := sb.Start(cmd, l.policy(buildProbe(t)), func() { _ = cmd.Wait() }); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("start: %v, want ErrUnavailable", err)
	}
}
