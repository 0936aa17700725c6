package evaluator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/worker"
)

// DefaultCommandTimeout bounds one run of an evaluator command.
const DefaultCommandTimeout = 5 * time.Minute

// maxCommandStdout bounds what is read of an evaluator command's stdout; a verdict is
// small, and anything past this is not one.
const maxCommandStdout = 1 << 20

// maxCommandStderr is how much of the end of an evaluator command's stderr is kept to
// explain a failure: a CLI's last words ("rate limited") are what matter.
const maxCommandStderr = 2 << 10

// commandKillGrace is how long an evaluator command's process group has between
// SIGTERM and SIGKILL, on timeout and for whatever it leaves running once it exits:
// enough for a CLI to close its connection, while the task waits for a verdict.
const commandKillGrace = 2 * time.Second

// CommandInput is the JSON an evaluator command reads on stdin. Prompt is the
// ready-made instruction (system and user text, as the Anthropic evaluator sends
// them), so a wrapper around a chat CLI can just pass it on, e.g.
//
//	jq -r .prompt | claude -p --model haiku --output-format json
//
// The other fields are the request itself for commands that judge on their own.
type CommandInput struct {
	Brief        string              `json:"brief"`
	Evaluate     string              `json:"evaluate"`
	Completion   contract.Completion `json:"completion"`
	Output       string              `json:"output"`
	OutputBytes  int                 `json:"output_bytes"` // length before bounding
	ContractHash string              `json:"contract_hash,omitempty"`
	Prompt       string              `json:"prompt"`
}

// Command evaluates by running a program: the request goes to its stdin as a
// CommandInput JSON object (never into its arguments, so task data cannot reach a
// shell or a flag) and it must print exactly one JSON verdict {"pass": …, "diagnosis": …}
// on stdout (text around the object is ignored; two verdicts, or one the output it was
// shown holds, are ErrMalformed: see ParseVerdict). The verdict may carry what it spent as
// "usage" (see commandUsage; the output of `claude -p --output-format json` counts as
// is), which becomes the Verdict's Usage. A non-zero exit, a timeout, or stdout
// without a verdict is an *InfraError. The command runs in a process group of its own
// that is killed as a whole on timeout, when ctx ends, and once the command exits, so
// nothing it started outlives the evaluation.
type Command struct {
	argv      []string
	timeout   time.Duration
	maxOutput int
	// Env is the command's environment; nil means the workers' allow-listed one
	// (worker.BaseEnv), never the runner's own: the command reads worker output, and
	// the runner's environment holds its secrets. Serve and runner pass BaseEnv plus
	// -evaluator-env.
	Env []string
	// Dir is the working directory; empty means the runner's.
	Dir string
	// Confine confines the command like a worker (it reads worker output and may be
	// talked into anything); nil runs it unconfined.
	Confine *worker.Confinement
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

// Evaluate runs the command on r and returns its verdict. Of the command's output it
// keeps only the first 1 MiB of stdout (more is ErrMalformed) and the last 2 KiB of
// stderr, whose end an exit error quotes.
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
		Prompt:       systemPrompt + "\n\n" + prompt(r, bounded),
	})
	if err != nil {
		return Verdict{}, infra("command", err)
	}

	out, err := c.Exchange(ctx, in)
	if err != nil {
		return Verdict{}, err
	}
	// The verdict must be the command's own: exactly one, none copied from the output.
	v, objs, err := parseVerdict(string(out), bounded)
	if err != nil {
		return Verdict{}, infra("command", err)
	}
	v.Usage = commandUsage(objs)
	return v, nil
}

// Exchange runs the command with in on its stdin and returns its stdout: the first
// 1 MiB (more is ErrMalformed). A command that cannot start, times out, is
// interrupted or exits non-zero is an *InfraError quoting the end of its stderr.
func (c *Command) Exchange(ctx context.Context, in []byte) ([]byte, error) {
	env := c.Env
	if env == nil {
		env = worker.BaseEnv()
	}
	stdout := &headBuffer{limit: maxCommandStdout}
	res, err := worker.Run(ctx, worker.Spec{
		Argv:      c.argv,
		Dir:       c.Dir,
		Env:       env,
		ExactEnv:  true,
		Stdin:     bytes.NewReader(in),
		Stdout:    stdout,
		Timeout:   c.timeout,
		KillGrace: commandKillGrace,
		TailBytes: maxCommandStderr,
		Confine:   c.Confine,
	})
	name := c.argv[0]
	// The group is killed once the command exits, so a background child still holding
	// stdout does not hold up the answer: the command's own status decides it.
	switch {
	case ctx.Err() != nil:
		return nil, infra("command", fmt.Errorf("%s interrupted: %w", name, ctx.Err()))
	case err != nil: // no log file, so this can only be a *worker.StartError
		var se *worker.StartError
		if errors.As(err, &se) {
			err = se.Err // "running x: exec: not found", without the worker's own prefix
		}
		return nil, infra("command", fmt.Errorf("running %s: %w", name, err))
	case res.TimedOut:
		return nil, infra("command", fmt.Errorf("%s gave no verdict within %s: %w", name, c.timeout, context.DeadlineExceeded))
	case res.ExitCode != 0:
		return nil, infra("command", fmt.Errorf("%s exited with status %d: %s", name, res.ExitCode, clipEnd(string(res.Tail), 500)))
	}
	if stdout.overflow {
		return nil, infra("command", fmt.Errorf("%w: %s printed more than %d bytes", ErrMalformed, name, maxCommandStdout))
	}
	return stdout.buf, nil
}

// headBuffer keeps the first limit bytes written to it and notes whether more came,
// so that a runaway command costs at most limit bytes of memory. worker.Run writes it
// from one goroutine and not after it returns, so it needs no lock.
type headBuffer struct {
	buf      []byte
	limit    int
	overflow bool
}

// Write implements io.Writer; it never fails, so the command is never blocked.
func (b *headBuffer) Write(p []byte) (int, error) {
	keep := p
	if room := b.limit - len(b.buf); len(keep) > room {
		b.overflow = true
		keep = keep[:room]
	}
	b.buf = append(b.buf, keep...)
	return len(p), nil
}
