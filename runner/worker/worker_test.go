package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// script returns a Command that runs testdata/name with args. The path is quoted
// because it is the test's, not task data, and may contain spaces.
func script(t testing.TB, name string, args ...string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	parts := []string{"/bin/sh", shQuote(p)}
	for _, a := range args {
		parts = append(parts, shQuote(a))
	}
	return strings.Join(parts, " ")
}

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func run(t *testing.T, s Spec) Result {
	t.Helper()
	res, err := Run(context.Background(), s)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// childPID reads the "child <pid>" line the testdata scripts print.
func childPID(t *testing.T, out []byte) int {
	t.Helper()
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "child "); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(rest))
			if err == nil {
				return pid
			}
		}
	}
	t.Fatalf("no child pid in output %q", out)
	return 0
}

// gone reports whether pid no longer runs. A zombie counts as gone: it is dead, and
// whether init has reaped it yet is not Run's business.
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// Field 3, after the parenthesised command name, is the state.
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && len(b) > i+2 {
		return b[i+2] == 'Z' || b[i+2] == 'X'
	}
	return false
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d survived the run", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestExitZero(t *testing.T) {
	res := run(t, Spec{Command: "echo hello"})
	if res.ExitCode != 0 || res.TimedOut || res.Cancelled || res.Signal != "" {
		t.Fatalf("result = %+v", res)
	}
	if string(res.Tail) != "hello\n" || res.OutputBytes != 6 {
		t.Fatalf("tail = %q, bytes = %d", res.Tail, res.OutputBytes)
	}
	if res.Duration <= 0 {
		t.Fatalf("duration = %v", res.Duration)
	}
}

func TestExitThreeIsAResultNotAnError(t *testing.T) {
	res := run(t, Spec{Command: script(t, "exit3.sh")})
	if res.ExitCode != 3 || res.TimedOut || res.Signal != "" {
		t.Fatalf("result = %+v", res)
	}
	if got := string(res.Tail); got != "to stdout\nto stderr\n" {
		t.Fatalf("tail = %q: both streams should be combined in order", got)
	}
}

func TestStdinEchoedBack(t *testing.T) {
	brief := "# Brief\nwrite `out.md`; $(not a command) 'quotes' \"too\"\n"
	res := run(t, Spec{Command: script(t, "echo_stdin.sh"), Stdin: strings.NewReader(brief)})
	if res.ExitCode != 0 || string(res.Tail) != brief {
		t.Fatalf("exit %d, tail %q", res.ExitCode, res.Tail)
	}
}

func TestEnvVisibleAndNotExecuted(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "pwned")
	hostile := "$(touch " + marker + ") `touch " + marker + "`; touch " + marker
	// A secret in the runner's environment must not reach the worker.
	t.Setenv("COUNTERSIGN_TEST_SECRET", "hunter2")
	res := run(t, Spec{
		Command: script(t, "print_env.sh"),
		Env:     []string{"COUNTERSIGN_TASK_TITLE=" + hostile, "COUNTERSIGN_TASK_ID=42"},
	})
	want := "title=" + hostile + "\nid=42\nsecret=unset\n"
	if string(res.Tail) != want {
		t.Fatalf("tail = %q, want %q", res.Tail, want)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("hostile env value was executed (marker exists: %v)", err)
	}
}

func TestEnvOverridesInherited(t *testing.T) {
	res := run(t, Spec{Command: `printf %s "$HOME"`, Env: []string{"HOME=/nowhere"}})
	if string(res.Tail) != "/nowhere" {
		t.Fatalf("HOME = %q", res.Tail)
	}
}

func TestTimeoutKillsCommandAndChild(t *testing.T) {
	var first bytes.Buffer
	res := run(t, Spec{
		Command:   script(t, "spawn_child.sh"),
		Timeout:   300 * time.Millisecond,
		KillGrace: 2 * time.Second,
		OnOutput:  func(b []byte) { first.Write(b) },
	})
	if !res.TimedOut || res.Cancelled {
		t.Fatalf("result = %+v", res)
	}
	// sh waits for its child; SIGTERM to the group ends both at once, no SIGKILL needed.
	if res.Signal != "SIGTERM" || res.SignalNum != syscall.SIGTERM || res.ExitCode != -1 {
		t.Fatalf("signal = %q, exit = %d", res.Signal, res.ExitCode)
	}
	if res.Duration > 1500*time.Millisecond {
		t.Fatalf("took %v: SIGTERM should have been enough", res.Duration)
	}
	waitGone(t, childPID(t, res.Tail))
	if first.String() != string(res.Tail) {
		t.Fatalf("OnOutput saw %q, tail %q", first.String(), res.Tail)
	}
}

func TestIgnoredSIGTERMGetsSIGKILLAfterGrace(t *testing.T) {
	grace := 300 * time.Millisecond
	// exec makes the trapping script the group leader, so its own end is reported.
	res := run(t, Spec{Command: "exec " + script(t, "ignore_term.sh"), Timeout: 300 * time.Millisecond, KillGrace: grace})
	if !res.TimedOut || res.Signal != "SIGKILL" {
		t.Fatalf("result = %+v", res)
	}
	if res.Duration < 600*time.Millisecond || res.Duration > 3*time.Second {
		t.Fatalf("duration %v: want timeout + grace", res.Duration)
	}
	if !strings.HasPrefix(string(res.Tail), "ready") {
		t.Fatalf("tail = %q", res.Tail)
	}
}

func TestIgnoredSIGTERMInSubprocessGetsSIGKILL(t *testing.T) {
	// Here the leader is an outer shell that dies of SIGTERM; the trapping script
	// below it must still be SIGKILLed when the grace period ends.
	res := run(t, Spec{Command: script(t, "ignore_term.sh") + "; true", Timeout: 300 * time.Millisecond,
		KillGrace: 300 * time.Millisecond})
	if !res.TimedOut || res.Duration < 600*time.Millisecond {
		t.Fatalf("result = %+v", res)
	}
	waitGone(t, childPID(t, res.Tail))
}

func TestGrandchildHoldingStdoutDoesNotHang(t *testing.T) {
	start := time.Now()
	res := run(t, Spec{Command: script(t, "grandchild.sh"), KillGrace: 200 * time.Millisecond})
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("Run took %v", took)
	}
	if res.ExitCode != 0 || res.TimedOut || res.Signal != "" {
		t.Fatalf("result = %+v: the shell itself exited 0", res)
	}
	waitGone(t, childPID(t, res.Tail))
}

func TestEscapedGrandchildDoesNotHang(t *testing.T) {
	if _, err := os.Stat("/usr/bin/setsid"); err != nil {
		t.Skip("setsid(1) not installed")
	}
	// setsid leaves the group, so no signal reaches it; Run must stop reading instead,
	// from the separate stdout pipe too.
	for _, separate := range []bool{false, true} {
		t.Run(fmt.Sprintf("separate stdout %v", separate), func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "pid")
			cmd := "setsid sh -c 'echo $$ > " + shQuote(marker) + "; exec sleep 30' & sleep 0.2; echo done"
			s := Spec{Command: cmd, KillGrace: 100 * time.Millisecond}
			var stdout bytes.Buffer
			if separate {
				s.Stdout = &stdout
			}
			start := time.Now()
			res := run(t, s)
			if b, err := os.ReadFile(marker); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Fatalf("Run took %v", took)
			}
			got := string(res.Tail)
			if separate {
				got = stdout.String()
			}
			if res.ExitCode != 0 || got != "done\n" {
				t.Fatalf("result = %+v, stdout %q", res, stdout.String())
			}
		})
	}
}

func TestArgvIsNotParsedByAShell(t *testing.T) {
	dir := t.TempDir()
	hostile := "$(touch pwned); touch pwned2"
	res := run(t, Spec{Argv: []string{"printf", "%s|%s", hostile, "two words"}, Dir: dir})
	if res.ExitCode != 0 || string(res.Tail) != hostile+"|two words" {
		t.Fatalf("result = %+v", res)
	}
	for _, name := range []string{"pwned", "pwned2"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Fatalf("an argument was run by a shell (%s: %v)", name, err)
		}
	}
}

func TestArgvProgramNotFound(t *testing.T) {
	_, err := Run(context.Background(), Spec{Argv: []string{"no-such-program-xyz", "arg"}})
	var se *StartError
	if !errors.As(err, &se) || se.Op != "start" || !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
}

func TestExactEnv(t *testing.T) {
	t.Setenv("COUNTERSIGN_TEST_SECRET", "hunter2")
	res := run(t, Spec{Argv: []string{"env"}, Env: []string{"A=1", "B=2", "A=3"}, ExactEnv: true})
	if got := string(res.Tail); got != "B=2\nA=3\n" {
		t.Fatalf("environment = %q: want exactly Env, the later A winning", got)
	}
	// nil means empty, not the runner's environment.
	res = run(t, Spec{Argv: []string{"env"}, ExactEnv: true})
	if res.ExitCode != 0 || len(res.Tail) != 0 {
		t.Fatalf("result = %+v, environment %q", res, res.Tail)
	}
}

func TestInheritAndBaseEnv(t *testing.T) {
	t.Setenv("COUNTERSIGN_TEST_A", "x=y")
	t.Setenv("COUNTERSIGN_TEST_B", "")
	t.Setenv("COUNTERSIGN_TEST_UNSET", "")
	os.Unsetenv("COUNTERSIGN_TEST_UNSET")
	got := Inherit("COUNTERSIGN_TEST_B", "COUNTERSIGN_TEST_UNSET", "COUNTERSIGN_TEST_A")
	if strings.Join(got, " ") != "COUNTERSIGN_TEST_B= COUNTERSIGN_TEST_A=x=y" {
		t.Fatalf("Inherit = %q", got)
	}
	t.Setenv("PATH", "")
	os.Unsetenv("PATH")
	if env := BaseEnv(); len(env) == 0 || env[0] != "PATH=/usr/local/bin:/usr/bin:/bin" {
		t.Fatalf("BaseEnv without PATH = %q", env)
	}
}

func TestStdoutApartFromStderr(t *testing.T) {
	var stdout bytes.Buffer
	logPath := filepath.Join(t.TempDir(), "err.log")
	res := run(t, Spec{Command: "echo reply; echo noise >&2; echo more", Stdout: &stdout, LogPath: logPath})
	if stdout.String() != "reply\nmore\n" {
		t.Fatalf("stdout = %q", stdout.String())
	}
	if string(res.Tail) != "noise\n" || res.OutputBytes != 6 {
		t.Fatalf("tail = %q, bytes = %d: only stderr belongs there", res.Tail, res.OutputBytes)
	}
	if b, _ := os.ReadFile(logPath); string(b) != "noise\n" {
		t.Fatalf("log = %q", b)
	}
}

func TestGrandchildHoldingStdoutIsKilled(t *testing.T) {
	var stdout bytes.Buffer
	start := time.Now()
	// The child holds only the separate stdout pipe; stderr reaches EOF at once.
	res := run(t, Spec{Command: `sleep 100 & echo "child $!" >&2; echo reply`, Stdout: &stdout,
		KillGrace: 200 * time.Millisecond})
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("Run took %v", took)
	}
	if res.ExitCode != 0 || stdout.String() != "reply\n" {
		t.Fatalf("result = %+v, stdout %q", res, stdout.String())
	}
	waitGone(t, childPID(t, res.Tail))
}

func TestContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	res, err := Run(ctx, Spec{Command: script(t, "spawn_child.sh"), Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cancelled || res.TimedOut || res.Signal != "SIGTERM" {
		t.Fatalf("result = %+v", res)
	}
	waitGone(t, childPID(t, res.Tail))
}

func TestContextDoneBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, Spec{Command: "true"})
	var se *StartError
	if !errors.As(err, &se) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestStartErrors(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]Spec{
		"missing shell": {Command: "true", Shell: filepath.Join(dir, "no-such-shell")},
		"bad dir":       {Command: "true", Dir: filepath.Join(dir, "no-such-dir")},
		"bad log":       {Command: "true", LogPath: filepath.Join(dir, "no-such-dir", "x.log")},
		"empty command": {Command: "  "},
		"empty argv":    {Argv: []string{" "}},
		"both forms":    {Command: "true", Argv: []string{"true"}},
		"bad env":       {Command: "true", Env: []string{"NOEQUALS"}},
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := Run(context.Background(), s)
			var se *StartError
			if !errors.As(err, &se) {
				t.Fatalf("err = %T %v, want *StartError", err, err)
			}
			if se.Error() == "" || se.Unwrap() == nil {
				t.Fatal("StartError without message or cause")
			}
			if res.OutputBytes != 0 {
				t.Fatalf("res = %+v", res)
			}
		})
	}
}

func TestTailIsExactlyLastNBytesAndLogHoldsEverything(t *testing.T) {
	const n = 20000
	var want strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	logPath := filepath.Join(t.TempDir(), "attempt-1.log")
	var streamed int64
	const tail = 1000
	res := run(t, Spec{
		Command:   script(t, "lines.sh", strconv.Itoa(n)),
		LogPath:   logPath,
		TailBytes: tail,
		OnOutput:  func(b []byte) { streamed += int64(len(b)) },
	})
	all := want.String()
	if string(res.Tail) != all[len(all)-tail:] {
		t.Fatalf("tail = %q...", res.Tail[:40])
	}
	got, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != all {
		t.Fatalf("log has %d bytes, want %d", len(got), len(all))
	}
	if res.OutputBytes != int64(len(all)) || streamed != res.OutputBytes || res.LogPath != logPath {
		t.Fatalf("bytes = %d, streamed = %d, want %d", res.OutputBytes, streamed, len(all))
	}
}

func TestRing(t *testing.T) {
	var all []byte
	r := newRing(7)
	for i, chunk := range []string{"ab", "cdefg", "", "h", "ijklmnopq", "rs", "tuvwxyz0"} {
		r.Write([]byte(chunk))
		all = append(all, chunk...)
		want := all
		if len(want) > 7 {
			want = want[len(want)-7:]
		}
		if got := r.Bytes(); string(got) != string(want) {
			t.Fatalf("step %d: %q, want %q", i, got, want)
		}
	}
}

func TestOutputErrorWhenLogCannotBeWritten(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("/dev/full not available")
	}
	res, err := Run(context.Background(), Spec{Command: "echo hi", LogPath: "/dev/full"})
	var oe *OutputError
	if !errors.As(err, &oe) || oe.Unwrap() == nil || oe.Error() == "" {
		t.Fatalf("err = %v", err)
	}
	if res.ExitCode != 0 || string(res.Tail) != "hi\n" {
		t.Fatalf("result = %+v", res)
	}
}

func TestDirIsUsed(t *testing.T) {
	dir := t.TempDir()
	res := run(t, Spec{Command: "pwd -P", Dir: dir})
	want, _ := filepath.EvalSymlinks(dir)
	if strings.TrimSpace(string(res.Tail)) != want {
		t.Fatalf("pwd = %q, want %q", res.Tail, want)
	}
}

func TestSignalNames(t *testing.T) {
	if signalName(syscall.SIGTERM) != "SIGTERM" || signalName(syscall.Signal(77)) != "signal 77" {
		t.Fatal("signal names")
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for i := 0; i < 5; i++ {
		run(t, Spec{Command: script(t, "grandchild.sh"), KillGrace: 50 * time.Millisecond,
			Stdin: strings.NewReader("ignored")})
		run(t, Spec{Command: "sleep 10", Timeout: 20 * time.Millisecond})
		// Two pipes, two drains, and the goroutine that waits for both.
		run(t, Spec{Command: script(t, "grandchild.sh"), KillGrace: 50 * time.Millisecond, Stdout: io.Discard})
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines: %d before, %d after\n%s", before, runtime.NumGoroutine(),
				buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestConcurrentRuns(t *testing.T) {
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func(i int) {
			res, err := Run(context.Background(), Spec{
				Command: `printf '%s' "$N"`, Env: []string{"N=" + strconv.Itoa(i)},
			})
			if err == nil && string(res.Tail) != strconv.Itoa(i) {
				err = fmt.Errorf("run %d printed %q", i, res.Tail)
			}
			errs <- err
		}(i)
	}
	for i := 0; i < 8; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
