package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/countersign/countersign/runner/sandbox"
	"github.com/countersign/countersign/runner/worker"
)

// gitTimeout bounds one git command: adding or removing a worktree of a large
// repository takes seconds, and a git stuck on a lock must not hold a claim forever.
const gitTimeout = 5 * time.Minute

// git runs git in dir with arguments passed as argv, never through a shell, with the
// workers' minimal environment: the repository belongs to a worker, whose hooks (a
// post-checkout hook runs on worktree add) must never see the runner's secrets, and a
// GIT_DIR or GIT_WORK_TREE inherited from, say, a hook would point git elsewhere.
// Hooks and fsmonitor commands are switched off for the same reason. It runs through
// worker.Run, in a process group of its own that is killed with anything git left
// behind, and within gitTimeout.
//
// Confined, git may write the repository and the worktrees directory, nothing else.
func (m *Manager) git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return m.gitReading(ctx, dir, nil, args...)
}

// gitReading is git with read access to the paths in read as well: a worktree's
// repository (see GitPaths).
func (m *Manager) gitReading(ctx context.Context, dir string, read []string, args ...string) ([]byte, error) {
	return m.run(ctx, gitRun{dir: dir, args: args, read: read, write: []string{dir, filepath.Join(m.root, "worktrees")}})
}

// gitRun is one git command and, when the manager is confined, exactly what it may
// touch: each operation names its own grants rather than sharing one broad policy.
type gitRun struct {
	dir    string    // git -C dir
	args   []string  // after the fixed safety options
	env    []string  // KEY=VALUE on top of the minimal environment
	stdin  []byte    // standard input; /dev/null when nil
	stdout io.Writer // receives stdout instead of the returned slice when set

	read  []string // hierarchies git may read, beyond the system's
	write []string // hierarchies git may read and write
	ports []uint16 // TCP ports git may connect to (a push); none otherwise
}

// gitSafety are the options every git command of the manager runs with. Hooks and
// fsmonitor would run programs a worker may have written; the commit-graph and
// replace refs live where a worker may write (the object store, refs/replace) and
// would let it change what a commit id means to the runner's git; automatic gc would
// leave a detached process behind and write outside the grants of the operation.
var gitSafety = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "core.commitGraph=false",
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
}

// gitEnv is the environment every git command of the manager gets on top of the
// workers' minimal one. No global configuration: the runner's HOME is out of a
// confined git's reach, and its settings have no business in a task's repository
// anyway.
var gitEnv = []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_NO_REPLACE_OBJECTS=1", "GIT_TERMINAL_PROMPT=0"}

// gitExitError is a git command that ran and exited with a status other than 0.
type gitExitError struct {
	what string
	code int
	tail string
}

func (e *gitExitError) Error() string {
	return fmt.Sprintf("%s: exit status %d: %s", e.what, e.code, e.tail)
}

// exitCode is the status git exited with when err says it ran and failed; -1 otherwise.
func exitCode(err error) int {
	var ge *gitExitError
	if errors.As(err, &ge) {
		return ge.code
	}
	return -1
}

// run runs r (see git for the discipline every command follows) and returns its
// standard output; on a non-zero exit it returns the output with a *gitExitError.
func (m *Manager) run(ctx context.Context, r gitRun) ([]byte, error) {
	argv := append(append([]string{"git", "-C", r.dir}, gitSafety...), r.args...)
	if m.trace != nil {
		m.trace(argv)
	}
	var out bytes.Buffer
	spec := worker.Spec{Argv: argv, Stdout: &out, Timeout: gitTimeout, Env: append(append([]string{}, gitEnv...), r.env...)}
	if r.stdout != nil {
		spec.Stdout = r.stdout
	}
	if r.stdin != nil {
		spec.Stdin = bytes.NewReader(r.stdin)
	}
	if m.sandbox != nil {
		spec.Confine = &worker.Confinement{Sandbox: m.sandbox, Policy: sandbox.Policy{
			ReadExec:   append(sandbox.SystemReadPaths(os.Getenv("PATH")), r.read...),
			ReadWrite:  r.write,
			ConnectTCP: r.ports,
		}}
	}
	res, err := worker.Run(ctx, spec)
	what := "git " + strings.Join(r.args, " ")
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", what, err)
	case res.Cancelled:
		return nil, fmt.Errorf("%s: %w", what, context.Cause(ctx))
	case res.TimedOut:
		return nil, fmt.Errorf("%s: timed out after %s", what, gitTimeout)
	case res.ExitCode != 0:
		return out.Bytes(), &gitExitError{what: what, code: res.ExitCode, tail: strings.TrimSpace(string(res.Tail))}
	}
	return out.Bytes(), nil
}

// Revision returns the git commit the workspace's checkout is at, and whether its
// working tree is clean (no change to a tracked file, no untracked file that is not
// ignored). A workspace that is not a git checkout gives "", false, nil.
func (m *Manager) Revision(ctx context.Context, ws *Workspace) (commit string, clean bool, err error) {
	if commit = m.Head(ctx, ws); commit == "" {
		return "", false, nil
	}
	read, _ := ws.GitPaths()
	st, err := m.gitReading(ctx, ws.Dir, read, "status", "--porcelain", "-z")
	if err != nil {
		return commit, false, err
	}
	return commit, len(st) == 0, nil
}

// Head returns the git commit the workspace's checkout is at, without asking whether
// its working tree is clean (Revision does, at the cost of a status); "" for a
// workspace that is not a git checkout or whose repository has no commit yet.
func (m *Manager) Head(ctx context.Context, ws *Workspace) string {
	if _, err := os.Lstat(filepath.Join(ws.Dir, ".git")); err != nil {
		return ""
	}
	read, _ := ws.GitPaths()
	out, err := m.gitReading(ctx, ws.Dir, read, "rev-parse", "--verify", "-q", "HEAD")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// ReadCommand is a read-only git command in repo for a caller outside a Manager
// (`countersign attest verify` reading a repository it was pointed at), with the same
// gitSafety options and gitEnv as the manager's own git: replace refs and the commit
// graph must not change what a commit id means to a verifier either. It keeps the
// caller's environment otherwise and is not confined.
func ReadCommand(ctx context.Context, repo string, args ...string) *exec.Cmd {
	argv := append(append([]string{"-C", repo}, gitSafety...), args...)
	cmd := exec.CommandContext(ctx, "git", argv...)
	cmd.Env = append(os.Environ(), gitEnv...)
	return cmd
}
