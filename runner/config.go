package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/egress"
	"github.com/countersign/countersign/runner/evaluator"
	"github.com/countersign/countersign/runner/gateway"
	"github.com/countersign/countersign/runner/sandbox"
	"github.com/countersign/countersign/runner/triage"
	"github.com/countersign/countersign/runner/workspace"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultLease            = 30 * time.Second
	DefaultPoll             = 5 * time.Second
	DefaultGrace            = 10 * time.Second
	DefaultMaxInfraFailures = 5
	DefaultInfraBackoff     = time.Second
	DefaultMaxInfraBackoff  = time.Minute
	DefaultClaimBatch       = 16
)

// Observer receives the pool's measurements (the /metrics handler implements it). Its
// methods are called from the pool's goroutines and must be fast and safe for
// concurrent use.
type Observer interface {
	// Dispatched reports, for each claimed task, the time from the moment it became
	// ready to the moment its first worker process was started. "Ready" is the
	// latest of: the task's last change (created, assigned, rejected, retried), the
	// verification of its last dependency, the expiry of a dead runner's lease, and
	// the moment this pool started claiming (a task that was ready while no runner
	// was up is not charged for the downtime). Times come from the database rows,
	// which the service stamps with the clock of the process that made the change.
	Dispatched(latency time.Duration)
	// AttemptFinished reports an attempt's outcome (models.Outcome*) and, unless it
	// passed, the stage that decided it.
	AttemptFinished(outcome, stage string)
}

// Config configures a Pool. Service, Workspaces and RunnerID are required.
type Config struct {
	// Service applies the governance rules; its store must implement
	// models.Claimer (the gorm store does).
	Service *models.Service
	// Workspaces lays out task workspaces, briefs and logs.
	Workspaces *workspace.Manager
	// Triage, when set, is asked once per task whose attempts ran out on a work
	// failure, before the task is blocked: one more attempt with a new approach, or
	// escalation with a summary (triage.go). Nil blocks at once.
	Triage triage.Triager
	// Evaluator judges outputs of contracts with `evaluate`; nil means
	// evaluator.None, which fails such tasks closed (as infrastructure).
	Evaluator evaluator.Evaluator
	// RunnerID names this pool in leases; unique per process.
	RunnerID string
	// Lease is how long a claim holds a task without a heartbeat; renewed every
	// Lease/3. Another runner takes the task over once it expires, or sooner once
	// this runner has been silent for three beats of min(Lease/3, 1s) (takeover.go).
	Lease time.Duration
	// Poll is the fallback claim interval; the pool wakes on committed events first.
	Poll time.Duration
	// Grace is how long Stop lets running workers finish before cancelling them.
	Grace time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL of a worker's process group
	// (worker.DefaultKillGrace when zero).
	KillGrace time.Duration
	// MaxInfraFailures is how many infrastructure failures in a row block a task
	// with stage infrastructure.
	MaxInfraFailures int
	// InfraBackoff is the wait after the first infrastructure failure, doubled
	// after each further one up to MaxInfraBackoff.
	InfraBackoff    time.Duration
	MaxInfraBackoff time.Duration
	// ClaimBatch bounds how many tasks one claim transaction hands out.
	ClaimBatch int
	// ContradictionPhrases replaces the default admissions of failure
	// (verification-layers.md) when set.
	ContradictionPhrases []string
	// OnLog, when set, receives every chunk of every worker's output as it is read
	// (live streaming to the dashboard). It must copy the chunk to keep it, and be
	// fast: the worker blocks while it runs.
	OnLog func(taskID int64, chunk []byte)
	// Observer receives measurements; nil means none.
	Observer Observer
	// Sandbox confines every process the pool starts (worker, verify commands, git
	// status, reviewer). serve and runner always give one (possibly in mode off); nil
	// runs them unconfined.
	Sandbox *sandbox.Sandbox
	// APIURL is how confined workers reach Countersign's API and MCP server (given to
	// them as COUNTERSIGN_URL); its port is one they may connect to.
	APIURL string
	// ConnectPorts are the TCP ports every confined run may connect to besides
	// APIURL's; DefaultConnectPorts when nil. Runs in a private network reach no
	// other host at all: these apply to runs without one.
	ConnectPorts []uint16
	// Gateway is the model gateway (runner/gateway): each attempt's worker gets a
	// credential of its own and the gateway's address instead of a provider's key,
	// and the attempt is charged what the gateway metered. Nil: workers call
	// providers themselves and their reports are their usage.
	Gateway *gateway.Gateway
	// GatewayService serves Gateway on the runner's loopback, started by the caller;
	// runs in a private network reach it at the same port in their own. The pool's
	// Stop stops it once every worker is done.
	GatewayService *gateway.Service
	// PrivateNetwork gives each confined worker and reviewer run a network namespace
	// of its own (see network.go), where the sandbox can make one.
	PrivateNetwork bool
	// EgressAllow are the host patterns (runner/egress.ParseAllowlist) runs in a
	// private network may reach through the egress proxy; none by default.
	EgressAllow []string
	// Procs records the process groups of attempts, so that a runner started after a
	// crash reaps what the dead one left (ReapAll at Start) and a task's new attempt
	// never runs beside an old one (ReapTask); nil tracks nothing.
	Procs ProcessTracker
	// Log receives the pool's structured logs; nil means slog.Default().
	Log *slog.Logger
	// Landing says how verified task branches are named, merged, pushed and cleaned.
	Landing LandingConfig
	// JudgePath are the directories a judged run's PATH may name, before those a
	// worker could write are dropped (judge.DefaultPath when nil).
	JudgePath []string
	// JudgeWrite are directories every judged run may write besides its view: where a
	// team's verify commands leave reports (coverage, test logs) to keep. No worker
	// may write them unless an admin grants an agent the same path.
	JudgeWrite []string
	// JudgeGoCache is the judge's shared Go build cache, read-only under each judged
	// run's own layer (<data>/work/judge-env/gocache when empty). Only the judge's
	// compile-only warm-up writes it, so it must be no path an agent may write
	// (Agent.Sandbox.Write).
	JudgeGoCache string
}

// ProcessTracker records and reaps the process groups of attempts on this host
// (runner/procs implements it).
type ProcessTracker interface {
	// Track returns the worker.Confinement.OnStart hook for one run of an attempt.
	Track(taskID int64, attempt int) func(pid int) (done func())
	// ReapAll kills every recorded group left by an earlier runner and waits for it.
	ReapAll(ctx context.Context) (int, error)
	// ReapTask does the same for one task's groups, before its next attempt starts.
	ReapTask(ctx context.Context, taskID int64) (int, error)
}

func (c *Config) defaults() error {
	var missing []string
	if c.Service == nil {
		missing = append(missing, "Service")
	}
	if c.Workspaces == nil {
		missing = append(missing, "Workspaces")
	}
	if c.RunnerID == "" {
		missing = append(missing, "RunnerID")
	}
	if (c.Gateway == nil) != (c.GatewayService == nil) {
		return errors.New("runner: Gateway and GatewayService come together")
	}
	if _, err := egress.ParseAllowlist(c.EgressAllow); err != nil {
		return fmt.Errorf("runner: the egress allowlist: %w", err)
	}
	if len(missing) > 0 {
		return fmt.Errorf("runner: config is missing %v", missing)
	}
	for _, w := range c.JudgeWrite {
		root := c.Workspaces.Root()
		if !filepath.IsAbs(w) || filepath.Clean(w) == "/" || within(w, root) || within(root, w) {
			return fmt.Errorf("runner: judge write path %q must be an absolute directory apart from the data dir %s", w, root)
		}
	}
	if _, ok := c.Service.Store().(models.Claimer); !ok {
		return errors.New("runner: the store cannot claim tasks (it does not implement models.Claimer)")
	}
	if c.Evaluator == nil {
		c.Evaluator = evaluator.None{}
	}
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	if c.Grace <= 0 {
		c.Grace = DefaultGrace
	}
	if c.MaxInfraFailures <= 0 {
		c.MaxInfraFailures = DefaultMaxInfraFailures
	}
	if c.InfraBackoff <= 0 {
		c.InfraBackoff = DefaultInfraBackoff
	}
	if c.MaxInfraBackoff <= 0 {
		c.MaxInfraBackoff = DefaultMaxInfraBackoff
	}
	if c.ClaimBatch <= 0 {
		c.ClaimBatch = DefaultClaimBatch
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.ConnectPorts == nil {
		c.ConnectPorts = DefaultConnectPorts
	}
	return c.Landing.defaults()
}

// Presets are ready-made worker commands an admin can give a worker agent.
var Presets = map[string]string{
	// claude runs the Claude CLI in print mode: the brief arrives on stdin as the
	// prompt, and it prints stream-json, which the runner decodes into a readable log,
	// the final answer (what the checks read) and the usage. Confined, the runner lets
	// it run every tool (EnvPermissionMode bypassPermissions), so it can run the tests
	// it is judged by; unconfined it may only edit. A budget's room for the attempt is
	// its --max-budget-usd, a second fence behind the runner's own.
	"claude": `claude -p --output-format stream-json --verbose --permission-mode "${COUNTERSIGN_PERMISSION_MODE:-acceptEdits}" ${COUNTERSIGN_BUDGET_USD:+--max-budget-usd "$COUNTERSIGN_BUDGET_USD"}`,
	// codex runs OpenAI's Codex CLI against OPENAI_BASE_URL: see CodexPreset.
	"codex": CodexPreset,
	// qwen runs Qwen Code against any OpenAI-compatible Chat Completions API at
	// OPENAI_BASE_URL: the generic preset. See QwenPreset.
	"qwen": QwenPreset,
	// gemini runs Google's Gemini CLI against the Gemini API at GOOGLE_GEMINI_BASE_URL:
	// see GeminiPreset.
	"gemini": GeminiPreset,
}

// within reports whether p is dir or below it (both cleaned, absolute).
func within(p, dir string) bool {
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(p))
	return err == nil && filepath.IsLocal(rel) || rel == "."
}
