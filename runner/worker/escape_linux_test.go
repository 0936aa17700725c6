//go:build linux && (amd64 || arm64)

package worker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/runner/sandbox"
)

var (
	probeOnce sync.Once
	probeBin  string
	probeErr  error
)

// buildProbe builds the sandbox's hostile probe once per test binary.
func buildProbe(t *testing.T) string {
	t.Helper()
	probeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "cs-worker-probe-")
		if err != nil {
			probeErr = err
			return
		}
		probeBin = filepath.Join(dir, "probe")
		if out, err := exec.Command("go", "build", "-o", probeBin, "../sandbox/internal/probe").CombinedOutput(); err != nil {
			probeErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	if probeErr != nil {
		t.Fatal(probeErr)
	}
	return probeBin
}

// pidNamespaces returns the sandbox, and fails in CI or skips elsewhere when its runs
// get no PID namespace (the runner does not hold CAP_SYS_ADMIN).
func pidNamespaces(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	sb := sandbox.Probe(sandbox.ModeOn)
	if !sb.Ready() {
		t.Fatalf("the sandbox must work on this machine: %s", sb.Status())
	}
	if !sb.KillsEscapees() {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI runs the tests as root: runs must get a PID namespace (%s)", sb.Status())
		}
		t.Skipf("escapees die with their run only where the runner holds CAP_SYS_ADMIN (%s)", sb.Status())
	}
	return sb
}

// escapeeAlive reports whether the process the probe left behind (-linger pidFile in
// its command line) still runs as pid; a zombie or a reused pid counts as gone.
func escapeeAlive(pid int, pidFile string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && bytes.Contains(b, []byte("-linger\x00"+pidFile+"\x00"))
}

// When Run returns, a confined run's escapee is gone, whatever it did to leave the
// group (setsid) and although it held the output pipe open; and holding the pipe no
// longer costs the run the kill grace. Unconfined, the same escapee survives Run and
// keeps it for the grace period: the checks can fail.
func TestConfinedRunLeavesNoEscapee(t *testing.T) {
	sb := pidNamespaces(t)
	probe := buildProbe(t)
	const grace = 3 * time.Second
	for _, confined := range []bool{true, false} {
		t.Run(fmt.Sprintf("confined %v", confined), func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "escapee.pid")
			s := Spec{Argv: []string{probe, "-escape", pidFile}, Dir: dir, KillGrace: grace}
			if confined {
				s.Confine = &Confinement{Sandbox: sb, Policy: sandbox.Policy{
					ReadExec:  append(sandbox.SystemReadPaths(os.Getenv("PATH")), filepath.Dir(probe)),
					ReadWrite: []string{dir},
				}}
			}
			type outcome struct {
				res Result
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := Run(context.Background(), s)
				done <- outcome{res, err}
			}()
			pid := 0
			for deadline := time.Now().Add(20 * time.Second); pid == 0; time.Sleep(5 * time.Millisecond) {
				select {
				case o := <-done:
					t.Fatalf("Run returned (%v) before the escapee reported: %+v", o.err, o.res)
				default:
				}
				if b, err := os.ReadFile(pidFile); err == nil {
					pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				} else if time.Now().After(deadline) {
					t.Fatal("no escapee after 20s")
				}
			}
			t.Cleanup(func() {
				if escapeeAlive(pid, pidFile) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			if !escapeeAlive(pid, pidFile) {
				t.Fatalf("pid %d is not the escapee", pid)
			}
			if err := os.WriteFile(pidFile+".go", nil, 0o644); err != nil {
				t.Fatal(err)
			}
			released := time.Now()
			o := <-done
			took := time.Since(released)
			if o.err != nil || o.res.ExitCode != 0 || !strings.Contains(string(o.res.Tail), "escape: ok") {
				t.Fatalf("Run: %v, %+v, output %q", o.err, o.res, o.res.Tail)
			}
			alive := escapeeAlive(pid, pidFile)
			t.Logf("Run returned %v after the probe was let go; escapee alive: %v", took, alive)
			if confined {
				if alive {
					t.Fatalf("escapee %d outlived the run", pid)
				}
				if took > grace/2 {
					t.Fatalf("Run took %v after the probe was let go: the escapee held it up", took)
				}
			} else {
				if !alive {
					t.Fatalf("escapee %d died with an unconfined run", pid)
				}
				if took < grace {
					t.Fatalf("Run took %v; an escapee holding the pipe used to cost the grace period %v", took, grace)
				}
			}
		})
	}
}

// A confined worker is PID 1 of its namespace, and a timeout still ends the run. The
// group's SIGTERM does not reach a PID 1 that leaves SIGTERM at its default: a program
// exec'd as PID 1 (by exec, or because it needs no shell) ends only with the SIGKILL
// after the grace period, and a shell that runs the program as its child survives the
// SIGTERM that kills the child and exits 143 itself; a PID 1 that handles SIGTERM gets
// it as before.
func TestConfinedTimeoutEndsRunAsPID1(t *testing.T) {
	sb := pidNamespaces(t)
	dir := t.TempDir()
	c := &Confinement{Sandbox: sb, Policy: sandbox.Policy{ReadExec: sandbox.SystemReadPaths(os.Getenv("PATH")), ReadWrite: []string{dir}}}
	const timeout, grace = 300 * time.Millisecond, 500 * time.Millisecond
	for _, tc := range []struct {
		command  string
		exitCode int
		signal   string
		slow     bool // ended by the SIGKILL after the grace period
	}{
		{"exec sleep 30", -1, "SIGKILL", true},
		// A command that needs no shell is exec'd directly (direct.go): PID 1 itself.
		{"sleep 30", -1, "SIGKILL", true},
		{"sleep 30 && true", 143, "", false},
		{`trap 'echo term; exit 3' TERM; sleep 30 & wait`, 3, "", false},
	} {
		t.Run(tc.command, func(t *testing.T) {
			res := run(t, Spec{Command: tc.command, Dir: dir, Timeout: timeout, KillGrace: grace, Confine: c})
			if !res.TimedOut || res.ExitCode != tc.exitCode || res.Signal != tc.signal {
				t.Fatalf("result = %+v, tail %q: want a timeout, exit %d, signal %q", res, res.Tail, tc.exitCode, tc.signal)
			}
			if tc.slow && res.Duration < timeout+grace || !tc.slow && res.Duration >= timeout+grace || res.Duration > 10*time.Second {
				t.Fatalf("took %v (timeout %v, grace %v)", res.Duration, timeout, grace)
			}
		})
	}
}
