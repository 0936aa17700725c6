package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/runner"
	"github.com/countersign/countersign/runner/sandbox"
)

// config is every setting of every subcommand. Each comes from a flag whose default is
// the matching COUNTERSIGN_* environment variable (DATABASE_URL is honoured too), so
// flags win over the environment and the environment over built-in defaults.
type config struct {
	DataDir     string
	DatabaseURL string
	LogLevel    string
	Addr        string
	Demo        bool
	Ledger      string
	Evaluator   string
	EvalCommand string
	EvalModel   string
	EvalEnv     string
	EvalBaseURL string // Messages API endpoint; wins over ANTHROPIC_BASE_URL
	RunnerID    string
	Lease       time.Duration
	Poll        time.Duration
	Grace       time.Duration
	// Deadlines are the inbox kinds' deadlines (models.ParseDeadlines).
	Deadlines string
	// TriageModel and TriageCommand configure the triage (see newTriager).
	TriageModel, TriageCommand string
	// RecheckEvery is the periodic recheck's interval (drift.Rechecker); 0: off.
	RecheckEvery  time.Duration
	NoRunner      bool
	SecureCookies bool
	MetricsPublic bool   // serve /metrics without a bearer token
	Sandbox       string // on or off
	URL           string // how confined workers reach Countersign (COUNTERSIGN_URL)
	SandboxPorts  string // TCP ports every confined run may connect to, besides URL's
	JudgePath     string // --judge-path: directories a judged run's PATH may name first
	JudgeWrite    string // --judge-write: directories every judged run may write
	Landing       runner.LandingConfig
	MergeMode     string // --merge: fast-forward or merge-commit
	Gateway       gatewayConfig
}

// envOr returns the first non-empty environment variable of names, else def.
func envOr(def string, names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return def
}

// envBool reads a boolean environment variable, reporting a bad value by name.
func envBool(name string, def bool) (bool, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("environment variable %s: %q is not true or false", name, v)
	}
	return b, nil
}

// envDuration reads a duration environment variable, reporting a bad value by name.
func envDuration(name string, def time.Duration) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("environment variable %s: %q is not a positive duration like 30s", name, v)
	}
	return d, nil
}

// storeFlags registers the flags every subcommand that opens the database has.
func storeFlags(fs *flag.FlagSet, c *config) {
	fs.StringVar(&c.DataDir, "data-dir", envOr("data", "COUNTERSIGN_DATA_DIR"), "directory for the SQLite database, workspaces and logs (env COUNTERSIGN_DATA_DIR)")
	fs.StringVar(&c.DatabaseURL, "database-url", envOr("", "COUNTERSIGN_DATABASE_URL", "DATABASE_URL"), "PostgreSQL URL (postgres://…); empty uses SQLite in the data dir (env COUNTERSIGN_DATABASE_URL or DATABASE_URL)")
	fs.StringVar(&c.LogLevel, "log-level", envOr("info", "COUNTERSIGN_LOG_LEVEL"), "debug, info, warn or error (env COUNTERSIGN_LOG_LEVEL)")
}

// runnerFlags registers the flags of the runner pool (serve and runner).
func runnerFlags(fs *flag.FlagSet, c *config) error {
	var err error
	host, _ := os.Hostname()
	fs.StringVar(&c.RunnerID, "runner-id", envOr(fmt.Sprintf("%s-%d", host, os.Getpid()), "COUNTERSIGN_RUNNER_ID"), "name of this runner process in leases (env COUNTERSIGN_RUNNER_ID)")
	fs.StringVar(&c.Ledger, "ledger", envOr("local", "COUNTERSIGN_LEDGER"), "ledger: local (hash chain in the database) or hcs (Hedera; see HEDERA_* variables) (env COUNTERSIGN_LEDGER)")
	fs.StringVar(&c.Evaluator, "evaluator", envOr("auto", "COUNTERSIGN_EVALUATOR"), "semantic evaluator: anthropic, command, none, or auto (anthropic when ANTHROPIC_API_KEY is set, else none) (env COUNTERSIGN_EVALUATOR)")
	fs.StringVar(&c.EvalCommand, "evaluator-command", envOr("", "COUNTERSIGN_EVALUATOR_COMMAND"), "command printing a JSON verdict, for --evaluator=command; split on spaces, request on stdin (env COUNTERSIGN_EVALUATOR_COMMAND)")
	fs.StringVar(&c.EvalEnv, "evaluator-env", envOr("ANTHROPIC_API_KEY", "COUNTERSIGN_EVALUATOR_ENV"), "comma-separated variables passed to the evaluator command besides PATH, HOME and the locale (env COUNTERSIGN_EVALUATOR_ENV)")
	fs.StringVar(&c.EvalModel, "evaluator-model", envOr("", "COUNTERSIGN_EVALUATOR_MODEL"), "Anthropic model for --evaluator=anthropic (default: a small Haiku model) (env COUNTERSIGN_EVALUATOR_MODEL)")
	triageFlags(fs, c)
	fs.StringVar(&c.EvalBaseURL, "evaluator-base-url", envOr("", "COUNTERSIGN_EVALUATOR_BASE_URL"), "Anthropic API endpoint (a gateway or proxy; http or https) for the evaluator, winning over ANTHROPIC_BASE_URL; an evaluator command gets it as ANTHROPIC_BASE_URL (env COUNTERSIGN_EVALUATOR_BASE_URL)")
	if c.Lease, err = envDuration("COUNTERSIGN_LEASE", 30*time.Second); err != nil {
		return err
	}
	if c.Poll, err = envDuration("COUNTERSIGN_POLL", 5*time.Second); err != nil {
		return err
	}
	if c.Grace, err = envDuration("COUNTERSIGN_GRACE", 10*time.Second); err != nil {
		return err
	}
	fs.DurationVar(&c.Lease, "lease", c.Lease, "task lease; renewed by heartbeat, taken over by another runner when it expires (env COUNTERSIGN_LEASE)")
	fs.DurationVar(&c.Poll, "poll", c.Poll, "fallback polling interval; runners wake on events first (env COUNTERSIGN_POLL)")
	fs.DurationVar(&c.Grace, "grace", c.Grace, "on shutdown, how long running workers may finish before they are cancelled (env COUNTERSIGN_GRACE)")
	if c.RecheckEvery, err = envDuration("COUNTERSIGN_RECHECK_INTERVAL", 0); err != nil {
		return err
	}
	fs.DurationVar(&c.RecheckEvery, "recheck-interval", c.RecheckEvery, "compare verified tasks' work with what was verified this often, marking changed ones stale; 0 turns the periodic pass off (env COUNTERSIGN_RECHECK_INTERVAL)")
	fs.StringVar(&c.Sandbox, "sandbox", envOr("on", "COUNTERSIGN_SANDBOX"), "confine workers, verify commands, git and reviewers (Landlock, seccomp): on, or off to run them with the runner's own rights (env COUNTERSIGN_SANDBOX)")
	fs.StringVar(&c.URL, "url", envOr("", "COUNTERSIGN_URL"), "URL workers reach Countersign's API and MCP at, given to them as COUNTERSIGN_URL; serve defaults to its own address (env COUNTERSIGN_URL)")
	fs.StringVar(&c.SandboxPorts, "sandbox-ports", envOr("80,443", "COUNTERSIGN_SANDBOX_PORTS"), "comma-separated TCP ports every confined worker may connect to, besides Countersign's own (env COUNTERSIGN_SANDBOX_PORTS)")
	fs.StringVar(&c.JudgePath, "judge-path", envOr("", "COUNTERSIGN_JUDGE_PATH"), "colon-separated directories the checks' PATH names before the system's, for verify tools installed elsewhere; any a worker could write is dropped (env COUNTERSIGN_JUDGE_PATH)")
	fs.StringVar(&c.JudgeWrite, "judge-write", envOr("", "COUNTERSIGN_JUDGE_WRITE"), "colon-separated directories every check may write besides the judge's view, for reports to keep (env COUNTERSIGN_JUDGE_WRITE)")
	gatewayFlags(fs, &c.Gateway)
	return landingFlags(fs, c)
}

// landingFlags adds the flags that say where verified work goes.
func landingFlags(fs *flag.FlagSet, c *config) error {
	deleteMerged, err := envBool("COUNTERSIGN_DELETE_MERGED_BRANCHES", false)
	if err != nil {
		return err
	}
	if c.Landing.CleanupEvery, err = envDuration("COUNTERSIGN_WORKSPACE_CLEANUP", runner.DefaultCleanupEvery); err != nil {
		return err
	}
	fs.StringVar(&c.Landing.BranchPrefix, "branch-prefix", envOr(runner.DefaultBranchPrefix, "COUNTERSIGN_BRANCH_PREFIX"), "start of each worktree task's branch name; the task id follows (env COUNTERSIGN_BRANCH_PREFIX)")
	fs.StringVar(&c.MergeMode, "merge", envOr("fast-forward", "COUNTERSIGN_MERGE"), "how a verified task lands on its target: fast-forward (when the target has not moved; else a merge commit) or merge-commit (always) (env COUNTERSIGN_MERGE)")
	fs.BoolVar(&c.Landing.DeleteMerged, "delete-merged-branches", deleteMerged, "delete a task's branch once its verified commit is merged (env COUNTERSIGN_DELETE_MERGED_BRANCHES)")
	fs.StringVar(&c.Landing.PushRemote, "push-remote", envOr("", "COUNTERSIGN_PUSH_REMOTE"), "remote of the agents' checkouts to push verified task branches and merged targets to (env COUNTERSIGN_PUSH_REMOTE)")
	fs.DurationVar(&c.Landing.CleanupEvery, "workspace-cleanup", c.Landing.CleanupEvery, "how often the runner removes the worktrees of cancelled and vanished tasks; negative: never (env COUNTERSIGN_WORKSPACE_CLEANUP)")
	return nil
}

// landing checks the landing flags and returns the runner's landing settings.
func (c *config) landing() (runner.LandingConfig, error) {
	l := c.Landing
	switch c.MergeMode {
	case "", "fast-forward":
	case "merge-commit":
		l.MergeCommit = true
	default:
		return l, fmt.Errorf("flag -merge: %q is not fast-forward or merge-commit", c.MergeMode)
	}
	return l, nil
}

// sandboxPorts parses --sandbox-ports.
func (c *config) sandboxPorts() ([]uint16, error) {
	ports := []uint16{}
	for _, f := range strings.Split(c.SandboxPorts, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.ParseUint(f, 10, 16)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("flag -sandbox-ports: %q is not a TCP port", f)
		}
		ports = append(ports, uint16(n))
	}
	return ports, nil
}

// check validates the settings shared by every subcommand.
func (c *config) check() error {
	if c.DataDir == "" {
		return fmt.Errorf("flag -data-dir: must not be empty")
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return fmt.Errorf("flag -data-dir: %v", err)
	}
	c.DataDir = abs
	if c.DatabaseURL != "" && !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") {
		return fmt.Errorf("flag -database-url: must start with postgres:// or postgresql:// (leave it empty for SQLite)")
	}
	switch c.Ledger {
	case "", "local", "hcs":
	default:
		return fmt.Errorf("flag -ledger: %q is not local or hcs", c.Ledger)
	}
	switch c.Evaluator {
	case "", "auto", "anthropic", "command", "none":
	default:
		return fmt.Errorf("flag -evaluator: %q is not anthropic, command, none or auto", c.Evaluator)
	}
	if _, err := sandbox.ParseMode(c.Sandbox); err != nil {
		return fmt.Errorf("flag -sandbox: %q is not on or off", c.Sandbox)
	}
	if _, err := c.sandboxPorts(); err != nil {
		return err
	}
	if c.Evaluator == "command" && strings.TrimSpace(c.EvalCommand) == "" {
		return fmt.Errorf("flag -evaluator-command: required with -evaluator=command")
	}
	return nil
}

// logger builds the process logger at the configured level, as JSON on stderr.
func (c *config) logger() (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return nil, fmt.Errorf("flag -log-level: %q is not debug, info, warn or error", c.LogLevel)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})), nil
}
