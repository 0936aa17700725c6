// Package worker runs one worker command: an admin-defined shell command started in its
// own process group, fed the brief on stdin and the task facts in environment variables,
// bounded by a timeout, with its combined output streamed to a log file, to a live
// callback and to a bounded in-memory tail.
//
// It is also how the rest of the runner starts any child process (verify commands,
// git, evaluator commands), so that each gets the same process-group kill, pid-reuse
// guard, output bound and allow-listed environment rather than a copy of them.
//
// Task data never becomes part of the shell string: Spec.Command comes from the agent
// definition, which only an admin may change; everything a task contributes arrives
// through Spec.Stdin and Spec.Env, where the shell never parses it.
package worker

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/countersign/countersign/runner/sandbox"
)

// Defaults applied when the corresponding Spec field is zero.
const (
	DefaultShell     = "/bin/sh"
	DefaultKillGrace = 5 * time.Second
	DefaultTailBytes = 64 << 10
)

// readBufSize is the one buffer every byte of output passes through. Its size matches
// the default Linux pipe capacity so one read usually empties the pipe.
const readBufSize = 64 << 10

// stdinWaitDelay bounds how long reaping waits for the stdin copier once the group is
// dead. Only a process that escaped the group and holds stdin without reading it can
// make it matter; after this delay os/exec closes the pipe so Run cannot hang.
const stdinWaitDelay = time.Second

// drainQuiet is how long the pipe may stay silent, once the group is dead, before Run
// concludes that only an escaped process is holding it open.
const drainQuiet = 100 * time.Millisecond

// Spec describes one run. Exactly one of Command and Argv is required.
type Spec struct {
	// Command is run as `Shell -c Command` — or, with the default shell, as the one
	// program it names when it needs nothing of a shell (see direct.go): the same run,
	// one process fewer. It is admin-defined and must never contain task data: pass
	// that through Stdin and Env.
	Command string
	// Argv, when set instead of Command, is run without a shell: Argv[0] (looked up in
	// the runner's PATH unless it contains a slash) with Argv[1:] as its arguments. It
	// suits a fixed program such as git, whose arguments must reach it verbatim.
	Argv []string
	// Shell is the interpreter for Command; DefaultShell when empty. Unused with Argv.
	Shell string
	// Dir is the working directory; the runner's own when empty.
	Dir string
	// Stdin is copied to the command's standard input; /dev/null when nil. Use a
	// finite reader such as bytes.NewReader(brief): a reader that blocks is abandoned
	// (its copying goroutine with it) once the run is over.
	Stdin io.Reader
	// Env holds extra KEY=VALUE pairs appended to BaseEnv(); a key given here
	// overrides an inherited one.
	Env []string
	// ExactEnv makes Env the whole environment, without BaseEnv(), for a caller that
	// has built its own allow-list; a nil Env then means an empty environment, never
	// the runner's own.
	ExactEnv bool
	// Timeout bounds the run; zero means no limit other than ctx.
	Timeout time.Duration
	// KillGrace is how long the group has between SIGTERM and SIGKILL;
	// DefaultKillGrace when zero.
	KillGrace time.Duration
	// LogPath receives the full combined stdout and stderr (created or truncated,
	// mode 0640). Empty means no log file.
	LogPath string
	// TailBytes is the size of the in-memory tail kept in Result.Tail;
	// DefaultTailBytes when zero.
	TailBytes int
	// OnOutput, when set, is called with each chunk of output as it is read, from the
	// single goroutine that drains the pipe. The slice is reused once OnOutput returns,
	// so copy it to keep it; and OnOutput must be fast (or hand the copy off), because
	// while it runs nothing drains the pipe and the worker blocks on its next write.
	OnOutput func(chunk []byte)
	// Stdout, when set, receives the command's standard output on its own, for a
	// command whose stdout is a reply to parse rather than a log to show; only stderr
	// then reaches LogPath, OnOutput, Tail and OutputBytes. It is written from one
	// goroutine and never after Run returns; a Write error is ignored and the output
	// still drained, because a command blocked on a full pipe would hang the run.
	Stdout io.Writer
	// Confine says how the run is confined and tracked; nil runs it unconfined (still
	// in its own process group, still killed when the runner dies).
	Confine *Confinement
}

// Confinement is how a run is confined and tracked. Every process the runner starts in
// a task's workspace gets one.
type Confinement struct {
	// Sandbox starts the command; nil means unconfined.
	Sandbox *sandbox.Sandbox
	// Policy is what the run may touch.
	Policy sandbox.Policy
	// OnStart, when set, is called with the pid of the started process (its group id;
	// as the host numbers it, also in a PID namespace) and returns the func Run calls
	// once the whole group is dead — with a PID namespace (Sandbox.KillsEscapees), once
	// every process of the run is — : how a runner records the groups a successor must
	// reap if it dies.
	OnStart func(pid int) (done func())
}

// unconfined starts runs with no sandbox: a process group of their own and a
// parent-death signal, nothing more.
var unconfined = sandbox.Probe(sandbox.ModeOff)

// Result is the outcome of a run that started. A non-zero exit, a timeout or a
// cancellation is a normal Result, not an error.
type Result struct {
	// ExitCode is the exit status of the shell (or of Argv[0]), or -1 when a signal
	// ended it (see Signal).
	ExitCode int
	// TimedOut is set when Spec.Timeout expired and the group was terminated.
	TimedOut bool
	// Cancelled is set when ctx was done before the command exited.
	Cancelled bool
	// Signal names the signal that ended the shell ("SIGTERM", "SIGKILL", ...), if any.
	Signal string
	// SignalNum is that signal as a number, 0 when none, for callers that describe it
	// in their own words.
	SignalNum syscall.Signal
	// Tail holds exactly the last Spec.TailBytes of combined output (all of it when
	// shorter).
	Tail []byte
	// OutputBytes counts every byte of combined output read.
	OutputBytes int64
	// Duration is the wall time from start until the process was reaped.
	Duration time.Duration
	// LogPath is Spec.LogPath, echoed so that a Result is self-describing.
	LogPath string
}

// StartError reports that the command could not be run at all — no shell, a bad
// directory, a log file that cannot be created, a context already done. It is an
// infrastructure failure: it must not count against the worker's attempts.
type StartError struct {
	Op  string // what failed: "validate", "open log", "pipe", "start"
	Err error
}

// Error implements error.
func (e *StartError) Error() string { return "worker: " + e.Op + ": " + e.Err.Error() }

// Unwrap exposes the cause, e.g. for errors.Is(err, context.Canceled).
func (e *StartError) Unwrap() error { return e.Err }

// OutputError reports that the command ran but its log could not be written in full
// (e.g. a full disk). The Result returned with it is complete apart from the log; the
// run must be treated as an infrastructure failure because the evidence is missing.
type OutputError struct {
	Path string
	Err  error
}

// Error implements error.
func (e *OutputError) Error() string {
	return "worker: writing log " + e.Path + ": " + e.Err.Error()
}

// Unwrap exposes the cause.
func (e *OutputError) Unwrap() error { return e.Err }

// inheritedEnv names the only runner variables a worker sees. The runner's environment
// holds secrets (operator keys, API keys, database URLs) that must not reach a worker,
// so the environment is an allow-list, never os.Environ().
var inheritedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"}

// BaseEnv returns the minimal environment every worker starts from: the allow-listed
// variables of the runner's own environment (PATH, HOME, USER, LOGNAME, LANG, LC_ALL,
// LC_CTYPE, TZ, TMPDIR) that are set, and a default PATH when it is not.
func BaseEnv() []string {
	env := Inherit(inheritedEnv...)
	if _, ok := os.LookupEnv("PATH"); !ok {
		// First, where inheritedEnv would have put it.
		env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin"}, env...)
	}
	return env
}

// Inherit returns KEY=VALUE for each of keys that is set in the runner's environment,
// in the order given. It is the way to build an allow-listed environment for
// Spec.ExactEnv: the runner's own environment holds secrets no child may see.
func Inherit(keys ...string) []string {
	env := make([]string, 0, len(keys))
	for _, k := range keys {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// validate rejects specs that could only fail or that would smuggle data into the
// environment in a form the child would misread.
func validate(s Spec) error {
	switch {
	case len(s.Argv) > 0 && s.Command != "":
		return errors.New("both a command and an argv given")
	case len(s.Argv) > 0:
		if strings.TrimSpace(s.Argv[0]) == "" {
			return errors.New("empty program name")
		}
	case strings.TrimSpace(s.Command) == "":
		return errors.New("empty command")
	}
	for _, kv := range s.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsRune(kv, 0) {
			return fmt.Errorf("malformed environment entry %q", k)
		}
	}
	return nil
}

// signalGroup signals every process of the group. ESRCH (nobody left) is expected.
func signalGroup(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
}

func closeIfOpen(f *os.File) {
	if f != nil {
		f.Close()
	}
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL: "SIGILL", syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS",
	syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL", syscall.SIGSEGV: "SIGSEGV",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2", syscall.SIGXCPU: "SIGXCPU",
	syscall.SIGXFSZ: "SIGXFSZ",
}

// signalName gives the conventional name, which reads better in a diagnosis than Go's
// "terminated"/"killed".
func signalName(sig syscall.Signal) string {
	if n, ok := signalNames[sig]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}
