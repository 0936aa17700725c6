package evaluator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/countersign/countersign/models"
)

// DefaultCommandTimeout bounds one run of an evaluator command.
const DefaultCommandTimeout = 5 * time.Minute

// maxCommandStdout bounds what is read of an evaluator command's stdout; a verdict is
// small, and anything past this is not one.
const maxCommandStdout = 1 << 20

// CommandInput is the JSON an evaluator command reads on stdin. Prompt is the
// ready-made instruction (system and user text, as the Anthropic evaluator sends
// them), so a wrapper around a chat CLI can just pass it on, e.g.
//
//	jq -r .prompt | claude -p --model haiku --output-format json
//
// The other fields are the request itself for commands that judge on their own.
type CommandInput struct {
	Brief        string            `json:"brief"`
	Evaluate     string            `json:"evaluate"`
	Completion   models.Completion `json:"completion"`
	Output       string            `json:"output"`
	OutputBytes  int               `json:"output_bytes"` // length before bounding
	ContractHash string            `json:"contract_hash,omitempty"`
	Prompt       string            `json:"prompt"`
}

// Command evaluates by running a program: the request goes to its stdin as a
// CommandInput JSON object (never into its arguments, so task data cannot reach a
// shell or a flag) and it must print a JSON verdict {"pass": …, "diagnosis": …} on
// stdout (text around the object is ignored). A non-zero exit, a timeout, or stdout
// without a verdict is an *InfraError.
type Command struct {
	argv      []string
	timeout   time.Duration
	maxOutput int
	// Env is the command's environment; nil means the runner's own environment. The
	// command reads worker output, so callers should pass an allow-list (serve and
	// runner pass the workers' minimal environment plus -evaluator-env).
	Env []string
	// Dir is the working directory; empty means the runner's.
	Dir string
}

// NewCommand returns an evaluator running argv (argv[0] is looked up in PATH) with at
// most timeout per evaluation (DefaultCommandTimeout when zero).
func NewCommand(argv []string, timeout time.Duration) (*Command, error) {
	if len(argv) == 0 || strings.TrimSpace(argv[0]) == "" {
		return nil, errors.New("command evaluator: no command given")
	}
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	return &Command{argv: append([]string(nil), argv...), timeout: timeout, maxOutput: DefaultMaxOutputBytes}, nil
}

// WithMaxOutputBytes sets how much of the worker output the command is given
// (DefaultMaxOutputBytes when n <= 0) and returns c.
func (c *Command) WithMaxOutputBytes(n int) *Command {
	if n <= 0 {
		n = DefaultMaxOutputBytes
	}
	c.maxOutput = n
	return c
}

// Evaluate runs the command on r.
func (c *Command) Evaluate(ctx context.Context, r Request) (Verdict, error) {
	if strings.TrimSpace(r.Evaluate) == "" {
		return Verdict{}, infra("command", errors.New("nothing to evaluate: the contract has no evaluate criteria"))
	}
	bounded := Bound(r.Output, c.maxOutput)
	in, err := json.Marshal(CommandInput{
		Brief:        r.Brief,
		Evaluate:     r.Evaluate,
		Completion:   r.Completion,
		Output:       string(bounded),
		OutputBytes:  len(r.Output),
		ContractHash: r.ContractHash,
		Prompt:       systemPrompt + "\n\n" + Prompt(r, c.maxOutput),
	})
	if err != nil {
		return Verdict{}, infra("command", err)
	}

	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, c.argv[0], c.argv[1:]...)
	cmd.Env = c.Env
	cmd.Dir = c.Dir
	cmd.Stdin = bytes.NewReader(in)
	stdout := &limitedBuffer{limit: maxCommandStdout}
	stderr := &limitedBuffer{limit: 2 << 10, keepTail: true}
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = 2 * time.Second

	err = cmd.Run()
	_ = killGroup(cmd)
	name := c.argv[0]
	switch {
	case ctx.Err() != nil:
		return Verdict{}, infra("command", fmt.Errorf("%s interrupted: %w", name, ctx.Err()))
	case cctx.Err() != nil:
		return Verdict{}, infra("command", fmt.Errorf("%s gave no verdict within %s: %w", name, c.timeout, context.DeadlineExceeded))
	case err != nil && !errors.Is(err, exec.ErrWaitDelay):
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return Verdict{}, infra("command", fmt.Errorf("%s exited with status %d: %s", name, exitErr.ExitCode(), clip(stderr.String(), 500)))
		}
		return Verdict{}, infra("command", fmt.Errorf("running %s: %w", name, err))
	}
	if stdout.overflow {
		return Verdict{}, infra("command", fmt.Errorf("%w: %s printed more than %d bytes", ErrMalformed, name, maxCommandStdout))
	}
	v, err := ParseVerdict(stdout.String())
	if err != nil {
		return Verdict{}, infra("command", err)
	}
	return v, nil
}

// killGroup kills cmd's process group, so that nothing the evaluator command started
// outlives it.
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
	return nil
}

// limitedBuffer keeps at most limit bytes: the first ones, or with keepTail the last
// ones. Safe for concurrent writers.
type limitedBuffer struct {
	mu       sync.Mutex
	buf      []byte
	limit    int
	keepTail bool
	overflow bool
}

var _ io.Writer = (*limitedBuffer)(nil)

// Write implements io.Writer; it never fails, so the command is never blocked.
func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.limit {
		b.overflow = true
		if b.keepTail {
			b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.limit:]...)
		} else {
			b.buf = b.buf[:b.limit]
		}
	}
	return len(p), nil
}

// String returns the kept bytes.
func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
