package checks

import (
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// TailSize is how much of a command's combined output a diagnosis keeps: the last
// 4 KiB, where compilers and test runners print their summary.
const TailSize = 4 << 10

// waitDelay bounds how long a finished or killed command may keep its output pipes
// open through a leftover grandchild before Wait gives up on them.
const waitDelay = 3 * time.Second

// tailBuffer is an io.Writer that keeps only the last limit bytes written to it and
// counts the total. Safe for concurrent writers.
type tailBuffer struct {
	mu    sync.Mutex
	limit int
	buf   []byte
	total int64
}

func newTailBuffer(limit int) *tailBuffer { return &tailBuffer{limit: limit} }

// Write implements io.Writer; it never fails.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(p))
	if len(p) >= t.limit {
		t.buf = append(t.buf[:0], p[len(p)-t.limit:]...)
		return len(p), nil
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.limit { // trim rarely, not on every write
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.limit:]...)
	}
	return len(p), nil
}

// String returns the kept tail, starting on a rune boundary, prefixed with a marker
// when earlier output was dropped.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > t.limit {
		b = b[len(b)-t.limit:]
	}
	for i := 0; i < len(b) && i < utf8.UTFMax && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	if dropped := t.total - int64(len(b)); dropped > 0 {
		return "[… " + strconv.FormatInt(dropped, 10) + " earlier bytes omitted]\n" + string(b)
	}
	return string(b)
}

// inOwnGroup makes cmd start in a process group of its own and, when its context
// ends, kills the whole group, so that nothing the command started outlives a timeout.
func inOwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = waitDelay
}

// killGroup sends SIGKILL to cmd's process group (if it started).
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if err == syscall.ESRCH {
		return os.ErrProcessDone
	}
	return err
}

// runInGroup starts cmd in its own process group with stdout and stderr both
// written to out, and waits for it. Output goes through an os.Pipe rather than
// exec's copying goroutines so that Wait returns as soon as the command itself exits;
// the group is then killed, so background children neither outlive the command nor
// hold it up by keeping the pipe open. started is false when cmd could not be started.
func runInGroup(cmd *exec.Cmd, out io.Writer) (started bool, err error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return false, err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	inOwnGroup(cmd)
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return false, err
	}
	pw.Close() // the child holds its own copy
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(out, pr)
	}()
	err = cmd.Wait()
	_ = killGroup(cmd)
	// A process that left the group (setsid) may still hold the pipe: stop reading
	// after a grace period rather than wait for it.
	timer := time.NewTimer(waitDelay)
	select {
	case <-copied:
	case <-timer.C:
	}
	timer.Stop()
	pr.Close()
	<-copied
	return true, err
}

// minimalEnv is the environment of a check command when the caller gives none: the
// few variables tools need to find themselves, and nothing else of the runner's
// environment (which may hold secrets).
func minimalEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "GOPATH", "GOCACHE", "GOMODCACHE"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}
