package worker

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/countersign/countersign/runner/sandbox"
)

// Run starts s.Command (or s.Argv) and waits for it and its whole process group to
// finish. On timeout or when ctx is done the group gets SIGTERM, then SIGKILL after
// KillGrace. When the shell exits on its own, whatever it left running in its group gets the same
// treatment, because a run's processes must not outlive it: stragglers still holding
// the output pipe get KillGrace to finish writing. Processes that leave the group
// (setsid) cannot be killed this way; Run stops reading from them rather than hang.
//
// A confined run whose sandbox KillsEscapees (a PID namespace by unshare where the runner
// holds CAP_SYS_ADMIN, else inside a user namespace of its own) is PID 1
// of a PID namespace of its own, and then, unlike an unconfined run:
//   - no process of the run survives it, in its group or not: when the shell (or
//     Argv[0]) exits or is killed, the kernel SIGKILLs everything left in the
//     namespace, and Run returns only once all of it is gone. Stragglers get no SIGTERM
//     and no grace to finish writing (what they wrote before is still read), and one
//     that left the group cannot hold Run up for KillGrace by keeping the pipe open.
//   - the timeout's (or ctx's) SIGTERM reaches the group's other processes but not the
//     leader unless it handles SIGTERM: PID 1 is spared every signal it leaves at its
//     default, except SIGKILL. `sh -c cmd`, where sh runs cmd as its child rather than
//     exec it (Debian's dash does), survives the SIGTERM that ends cmd and exits 143 at
//     once (ExitCode 143, no Signal, where an unconfined run reports SIGTERM); a
//     program exec'd as the leader that leaves SIGTERM at its default (`exec sleep 9`,
//     an Argv program) ends only with the SIGKILL after KillGrace (Signal SIGKILL,
//     KillGrace later); one that traps SIGTERM gets it as before. The same goes for
//     signals it sends itself (kill $$; writing to a closed pipe gives it EPIPE rather
//     than SIGPIPE).
//   - orphans are reparented to the leader, not to the host's init, and stay zombies
//     until it exits if it does not reap them; its getpid() is 1, but /proc is the
//     host's, so ps and /proc/<pid> show host pids.
//   - a process stuck in uninterruptible sleep (a hung network filesystem) delays the
//     leader's reported exit, and so Run, until it wakes: the kernel reports a
//     namespace's init dead only once every process in it is.
//
// The error is non-nil only when the command could not start (*StartError) or its log
// could not be written (*OutputError, with a complete Result).
func Run(ctx context.Context, s Spec) (Result, error) {
	if err := validate(s); err != nil {
		return Result{}, &StartError{Op: "validate", Err: err}
	}
	if err := ctx.Err(); err != nil {
		return Result{}, &StartError{Op: "start", Err: err}
	}
	r := newRun(s)
	if err := r.openPipes(); err != nil {
		return Result{}, err
	}
	if err := r.startCommand(); err != nil {
		return Result{}, err
	}
	pgid := r.cmd.Process.Pid // Setpgid with Pgid 0: the group id is the leader's pid
	r.startReaders()
	groupDone := r.onStart(pgid)

	res := Result{LogPath: s.LogPath}
	r.supervise(ctx, pgid, &res)
	waitErr := r.reap()
	res.Duration = time.Since(r.started)
	groupDone()
	r.drainRest()
	return r.result(res, waitErr)
}

// execution is one call of Run: the spec with its defaults applied and the state that
// Run's steps hand on to each other, in the order Run takes them.
type execution struct {
	s        Spec
	shell    string
	grace    time.Duration
	tailSize int

	// openPipes
	logFile *os.File
	pr, pw  *os.File // combined output: the readers' end and the child's
	sr, sw  *os.File // stdout alone, only when s.Stdout is set

	// startCommand
	sb      *sandbox.Sandbox
	policy  sandbox.Policy
	onStart func(pgid int) (done func())
	cmd     *exec.Cmd
	started time.Time
	exited  chan struct{} // closed once the leader has exited (it is then a zombie)
	reap    func() error

	// startReaders
	out     *output   // the combined output, whose tail and count the Result reports
	outs    []*output // every pipe's drain, out first
	readers []*os.File
	drained chan struct{} // closed once every pipe has reached EOF (or its read deadline)
}

// newRun applies the Spec's defaults.
func newRun(s Spec) *execution {
	r := &execution{s: s, shell: s.Shell, grace: s.KillGrace, tailSize: s.TailBytes, exited: make(chan struct{})}
	if r.shell == "" {
		r.shell = DefaultShell
	}
	if r.grace <= 0 {
		r.grace = DefaultKillGrace
	}
	if r.tailSize <= 0 {
		r.tailSize = DefaultTailBytes
	}
	r.sb, r.onStart = unconfined, func(int) func() { return func() {} }
	if c := s.Confine; c != nil {
		if c.Sandbox != nil {
			r.sb, r.policy = c.Sandbox, c.Policy
		}
		if c.OnStart != nil {
			r.onStart = c.OnStart
		}
	}
	return r
}

// openPipes opens the log file and the output pipes. On failure nothing stays open.
func (r *execution) openPipes() error {
	if r.s.LogPath != "" {
		f, err := os.OpenFile(r.s.LogPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
		if err != nil {
			return &StartError{Op: "open log", Err: err}
		}
		r.logFile = f
	}
	// One pipe for stdout and stderr (a second one for stdout when s.Stdout is set),
	// handed to the child as an *os.File so that os/exec starts no copying goroutine
	// of its own: our readers are the only ones, and Run alone decides when to stop.
	var err error
	if r.pr, r.pw, err = os.Pipe(); err != nil {
		closeIfOpen(r.logFile)
		return &StartError{Op: "pipe", Err: err}
	}
	if r.s.Stdout != nil {
		if r.sr, r.sw, err = os.Pipe(); err != nil {
			r.pr.Close()
			r.pw.Close()
			closeIfOpen(r.logFile)
			return &StartError{Op: "pipe", Err: err}
		}
	}
	return nil
}

// newCmd is the command for argv with the run's directory, environment, stdin and
// pipes.
func (r *execution) newCmd(argv []string) *exec.Cmd {
	var env []string
	if r.s.ExactEnv {
		env = append([]string{}, r.s.Env...) // non-nil: nil would inherit everything
	} else {
		env = append(BaseEnv(), r.s.Env...)
	}
	stdout := r.pw
	if r.sw != nil {
		stdout = r.sw
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdin = r.s.Dir, env, r.s.Stdin
	cmd.Stdout, cmd.Stderr = stdout, r.pw
	cmd.WaitDelay = stdinWaitDelay
	return cmd
}

// whileRunning is what the sandbox runs once cmd has started. The sandbox waits for
// the exit on the thread that started the command: the command's parent-death
// signal is tied to that thread.
func (r *execution) whileRunning(cmd *exec.Cmd) func() {
	return func() {
		r.reap = awaitExit(cmd)
		close(r.exited)
	}
}

// startCommand starts the command in the sandbox and closes the child's ends of the
// pipes. On failure nothing stays open.
func (r *execution) startCommand() error {
	r.started = time.Now()
	var err error
	if len(r.s.Argv) > 0 {
		r.cmd = r.newCmd(r.s.Argv)
		err = r.sb.Start(r.cmd, r.policy, r.whileRunning(r.cmd))
	} else {
		if r.shell == DefaultShell {
			// Without a shell when it needs none; a direct start that fails (a script
			// without #!, a program the sandbox may not run) is the shell's to report,
			// as it always was.
			r.cmd = startDirect(r.s.Command, r.newCmd, r.sb, r.policy, r.whileRunning)
		}
		if r.cmd == nil {
			r.cmd = r.newCmd([]string{r.shell, "-c", r.s.Command})
			err = r.sb.Start(r.cmd, r.policy, r.whileRunning(r.cmd))
		}
	}
	if err != nil {
		r.pw.Close()
		r.pr.Close()
		closeIfOpen(r.sw)
		closeIfOpen(r.sr)
		closeIfOpen(r.logFile)
		return &StartError{Op: "start", Err: err}
	}
	// The child has its copies; ours must go or the readers never see EOF.
	r.pw.Close()
	closeIfOpen(r.sw)
	return nil
}

// startReaders starts draining every pipe.
func (r *execution) startReaders() {
	r.out = newOutput(r.tailSize, r.logFile, r.s.OnOutput)
	go r.out.drain(r.pr)
	r.outs, r.readers = []*output{r.out}, []*os.File{r.pr}
	if r.sr != nil {
		so := &output{onOutput: func(b []byte) { _, _ = r.s.Stdout.Write(b) }, done: make(chan struct{})}
		go so.drain(r.sr)
		r.outs, r.readers = append(r.outs, so), append(r.readers, r.sr)
	}
	r.drained = make(chan struct{})
	go func() {
		for _, o := range r.outs {
			<-o.done
		}
		close(r.drained)
	}()
}

// outputBytes is how much every pipe has delivered so far.
func (r *execution) outputBytes() (n int64) {
	for _, o := range r.outs {
		n += o.n.Load()
	}
	return n
}

// supervise waits for the leader to exit, ending the group on timeout or when ctx
// is done, then ends whatever the leader left in its group. It returns with the
// whole group SIGKILLed.
func (r *execution) supervise(ctx context.Context, pgid int, res *Result) {
	var timeoutC <-chan time.Time
	if r.s.Timeout > 0 {
		t := time.NewTimer(r.s.Timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	ctxDone := ctx.Done()
	var killC <-chan time.Time
	var killTimer *time.Timer
	terminated := false
	terminate := func() {
		terminated = true
		signalGroup(pgid, syscall.SIGTERM)
		killTimer = time.NewTimer(r.grace)
		killC = killTimer.C
		timeoutC, ctxDone = nil, nil
	}
	killed := false
	kill := func() {
		killed = true
		signalGroup(pgid, syscall.SIGKILL)
		killC = nil
	}

	// Phase 1: until the shell exits.
	for running := true; running; {
		select {
		case <-r.exited:
			running = false
		case <-timeoutC:
			res.TimedOut = true
			terminate()
		case <-ctxDone:
			res.Cancelled = true
			terminate()
		case <-killC:
			kill()
		}
	}

	// Phase 2: the shell is a zombie (on Linux), so its pid still pins the group id and
	// signalling -pgid cannot reach an unrelated group. Terminate stragglers and give
	// those holding the pipe the rest of the grace period to flush.
	if !terminated {
		terminate()
	}
	if !killed {
		select {
		case <-r.drained:
		case <-killC:
		}
	}
	// Unconditionally: stragglers that closed the pipe never show up as pending output.
	signalGroup(pgid, syscall.SIGKILL)
	if killTimer != nil {
		killTimer.Stop()
	}
}

// drainRest reads what is left once the group is dead and closes the pipes. The pipe
// normally reaches EOF at once. If it does not, a process that left the group still
// holds it: keep reading only while output still arrives (what was buffered when the
// group died), then stop rather than hang.
func (r *execution) drainRest() {
	for done := false; !done; {
		before := r.outputBytes()
		select {
		case <-r.drained:
			done = true
		case <-time.After(drainQuiet):
			if r.outputBytes() == before {
				for _, f := range r.readers {
					_ = f.SetReadDeadline(time.Now())
				}
				<-r.drained
				done = true
			}
		}
	}
	for _, f := range r.readers {
		f.Close()
	}
}

// result completes res with the exit status and the output, and closes the log.
func (r *execution) result(res Result, waitErr error) (Result, error) {
	if ps := r.cmd.ProcessState; ps != nil {
		res.ExitCode = ps.ExitCode()
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal, res.SignalNum = signalName(ws.Signal()), ws.Signal()
		}
	} else if waitErr != nil {
		// Cannot happen after a successful Start; keep the failure visible if it does.
		res.ExitCode = -1
	}
	out := r.out
	res.Tail = out.tail.Bytes()
	res.OutputBytes = out.n.Load()
	if r.logFile != nil {
		if cerr := r.logFile.Close(); cerr != nil && out.logErr == nil {
			out.logErr = cerr
		}
		if out.logErr != nil {
			return res, &OutputError{Path: r.s.LogPath, Err: out.logErr}
		}
	}
	return res, nil
}
