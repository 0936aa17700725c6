package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/runner"
	"github.com/countersign/countersign/runner/evaluator"
	"github.com/countersign/countersign/runner/procs"
	"github.com/countersign/countersign/runner/sandbox"
	"github.com/countersign/countersign/runner/worker"
	"github.com/countersign/countersign/runner/workspace"
)

// runnerHooks are the optional connections of the runner pool to the rest of the
// process (serve passes the dashboard's live log and the metrics).
type runnerHooks struct {
	// OnLog receives every chunk of worker output as it is read (live log streaming
	// to the dashboard). It must copy the chunk to keep it, and return quickly.
	OnLog func(taskID int64, chunk []byte)
	// Observer receives dispatch latencies and attempt outcomes (metrics).
	Observer runner.Observer
}

// runRunner runs only the runner pool: more machines sharing one PostgreSQL.
func runRunner(ctx context.Context, args []string, out io.Writer) error {
	var c config
	fs := newFlags("runner", "runner [flags]", out)
	storeFlags(fs, &c)
	if err := runnerFlags(fs, &c); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	log, err := c.logger()
	if err != nil {
		return err
	}
	db, err := openStore(ctx, &c)
	if err != nil {
		return err
	}
	defer db.Close()
	if db.Dialect() == store.DialectSQLite {
		// SQLite serialises writers on one connection per process: a second process
		// on the same file works, but only one pool should claim from it.
		log.Warn("runner on SQLite: run one runner process per database (use PostgreSQL for several)")
	}
	led, ledInfo, err := openLedger(&c, db)
	if err != nil {
		return err
	}
	if cl, ok := led.(interface{ Close() error }); ok {
		defer cl.Close()
	}
	// The publisher runs here too; across processes an advisory lock keeps one active.
	stopPub, err := startPublisher(ctx, &c, db, led, log)
	if err != nil {
		return err
	}
	sb, err := openSandbox(&c, log)
	if err != nil {
		stopAll(log, c.Grace, []func(context.Context) error{stopPub})
		return err
	}
	if !sb.Ready() {
		stopAll(log, c.Grace, []func(context.Context) error{stopPub})
		return errors.New(sb.Status())
	}
	svc, _, err := attestingService(&c, db, ledInfo)
	if err != nil {
		stopAll(log, c.Grace, []func(context.Context) error{stopPub})
		return err
	}
	pool, err := startRunner(ctx, &c, db, svc, sb, log, runnerHooks{})
	if err != nil {
		stopAll(log, c.Grace, []func(context.Context) error{stopPub})
		return err
	}
	recheck, err := startRechecker(ctx, &c, svc, log)
	if err != nil {
		stopAll(log, c.Grace+15*time.Second, []func(context.Context) error{stopPub, pool.Stop})
		return err
	}
	<-ctx.Done()
	log.Info("shutting down the runner pool", "grace", c.Grace)
	stopAll(log, c.Grace+15*time.Second, []func(context.Context) error{stopPub, recheck.Stop, pool.Stop})
	return nil
}

// startRunner builds the evaluator, the workspace manager (under <data-dir>/work)
// and the pool from c, and starts the pool, confined by sb. The pool's Stop stops it
// (idempotent): no new claims, the grace period for running workers, then
// cancellation and release of their leases.
func startRunner(ctx context.Context, c *config, db *store.DB, svc *models.Service, sb *sandbox.Sandbox, log *slog.Logger, opts runnerHooks) (pool *runner.Pool, err error) {
	ports, err := c.sandboxPorts()
	if err != nil {
		return nil, err
	}
	evConfine, err := evaluatorConfinement(c, sb, ports)
	if err != nil {
		return nil, err
	}
	ev, err := newEvaluator(c, log, evConfine)
	if err != nil {
		return nil, err
	}
	tri, err := newTriager(c, log, evConfine)
	if err != nil {
		return nil, err
	}
	landing, err := c.landing()
	if err != nil {
		return nil, err
	}
	ws, err := workspace.New(filepath.Join(c.DataDir, "work"))
	if err != nil {
		return nil, err
	}
	ws.Confine(sb)
	procs, err := procs.Open(filepath.Join(c.DataDir, "procs"))
	if err != nil {
		return nil, err
	}
	procs.Log = log
	private, err := c.Gateway.private()
	if err != nil {
		return nil, err
	}
	gw, gwService, err := startGateway(ctx, c.Gateway, svc.Templates, log)
	if err != nil {
		return nil, err
	}
	if ok, why := sb.NetworkIsolation(); private && sb.Enabled() && !ok {
		log.Warn("runs cannot get a private network: Landlock's port rules alone confine their connections (any host)", "why", why)
	}
	pool, err = runner.New(runner.Config{
		Gateway:        gw,
		GatewayService: gwService,
		PrivateNetwork: private,
		EgressAllow:    c.Gateway.egressAllow(),
		Sandbox:        sb,
		APIURL:         c.URL,
		ConnectPorts:   ports,
		JudgePath:      filepath.SplitList(c.JudgePath),
		JudgeWrite:     filepath.SplitList(c.JudgeWrite),
		Procs:          procs,
		Service:        svc,
		Workspaces:     ws,
		Evaluator:      ev,
		Triage:         tri,
		RunnerID:       c.RunnerID,
		Lease:          c.Lease,
		Poll:           c.Poll,
		Grace:          c.Grace,
		OnLog:          opts.OnLog,
		Observer:       opts.Observer,
		Log:            log,
		Landing:        landing,
	})
	if err != nil {
		return nil, err
	}
	if err := pool.Start(ctx); err != nil {
		return nil, err
	}
	return pool, nil
}

// openSandbox probes what the kernel can confine and logs it. A sandbox that is on but
// not Ready must not start workers: workers never run unconfined unless an admin said
// --sandbox=off.
func openSandbox(c *config, log *slog.Logger) (*sandbox.Sandbox, error) {
	mode, err := sandbox.ParseMode(c.Sandbox)
	if err != nil {
		return nil, err
	}
	// The data dir holds the database and every workspace: no grant may reach it but
	// the attempt's own directories inside it.
	if err := os.MkdirAll(c.DataDir, 0o750); err != nil {
		return nil, err
	}
	sb := sandbox.Probe(mode).Protect(c.DataDir)
	switch {
	case !sb.Ready():
		log.Error(sb.Status())
	case !sb.Enabled():
		log.Warn(sb.Status())
	default:
		log.Info(sb.Status(), "url", c.URL, "ports", c.SandboxPorts)
	}
	return sb, nil
}

// evaluatorConfinement confines an evaluator command to a home of its own under the
// data dir (a CLI's caches and settings), the system directories and the sandbox's
// ports: it reads worker output, which may try to talk it into anything.
func evaluatorConfinement(c *config, sb *sandbox.Sandbox, ports []uint16) (*worker.Confinement, error) {
	home := filepath.Join(c.DataDir, "evaluator", "home")
	if err := os.MkdirAll(home, 0o750); err != nil {
		return nil, err
	}
	return &worker.Confinement{Sandbox: sb, Policy: sandbox.Policy{
		ReadExec:   sandbox.SystemReadPaths(os.Getenv("PATH")),
		ReadWrite:  []string{home},
		ConnectTCP: ports,
	}}, nil
}

// newEvaluator picks the semantic evaluator: anthropic when asked for, or with auto
// when ANTHROPIC_API_KEY is set; a command; or none, which fails contracts with
// `evaluate` closed. Verdicts are cached by contract and output hash.
//
// The Anthropic evaluator's endpoint is -evaluator-base-url, else ANTHROPIC_BASE_URL,
// else Anthropic's own. It runs in this process, which no sandbox confines, so any
// port is reachable. A command runs confined to the sandbox's ports: it gets
// -evaluator-base-url as ANTHROPIC_BASE_URL, and the port of whichever
// ANTHROPIC_BASE_URL it gets is added to what it may connect to.
func newEvaluator(c *config, log *slog.Logger, confine *worker.Confinement) (evaluator.Evaluator, error) {
	const baseURLFlag = "flag -evaluator-base-url"
	if c.EvalBaseURL != "" {
		// Checked whatever the evaluator, so that a typo fails at startup.
		if err := evaluator.CheckBaseURL(c.EvalBaseURL); err != nil {
			return nil, fmt.Errorf("%s: %w", baseURLFlag, err)
		}
	}
	key := os.Getenv("ANTHROPIC_API_KEY")
	kind := c.Evaluator
	if kind == "" || kind == "auto" {
		kind = "none"
		if key != "" {
			kind = "anthropic"
		}
	}
	var ev evaluator.Evaluator
	switch kind {
	case "anthropic":
		if key == "" {
			return nil, errors.New("flag -evaluator=anthropic: ANTHROPIC_API_KEY is not set")
		}
		base, err := evaluator.ResolveBaseURL(c.EvalBaseURL, baseURLFlag)
		if err != nil {
			return nil, err
		}
		a, err := evaluator.NewAnthropic(evaluator.AnthropicConfig{APIKey: key, Model: c.EvalModel, BaseURL: base})
		if err != nil {
			return nil, err
		}
		log.Info("evaluator: anthropic", "model", a.Model(), "base_url", evaluator.RedactURL(base))
		ev = a
	case "command":
		argv := strings.Fields(c.EvalCommand)
		cmd, err := evaluator.NewCommand(argv, 0)
		if err != nil {
			return nil, fmt.Errorf("flag -evaluator-command: %w", err)
		}
		base := confineCommand(c, "evaluator", cmd, confine, log)
		log.Info("evaluator: command", "command", argv[0], "env", c.EvalEnv, "base_url", evaluator.RedactURL(base))
		ev = cmd
	default:
		log.Info("evaluator: none (contracts with evaluate criteria will not pass)")
		return evaluator.None{}, nil
	}
	return evaluator.NewCached(ev, 0), nil
}

// confineCommand gives a model command (evaluator, triage) the workers' minimal
// environment plus only the variables the operator names (-evaluator-env), confines
// it when confine is set, and opens the port of its Messages API endpoint; it returns
// that endpoint ("" for the default). The command reads worker output on stdin: it
// must not get the runner's environment, which holds its secrets. name ("evaluator",
// "triage") starts its log lines; cmd itself is never logged, its Env holds the keys.
func confineCommand(c *config, name string, cmd *evaluator.Command, confine *worker.Confinement, log *slog.Logger) string {
	cmd.Env = worker.BaseEnv()
	if confine != nil {
		cmd.Confine, cmd.Dir = confine, confine.Policy.ReadWrite[0]
		cmd.Env = append(cmd.Env, "HOME="+cmd.Dir, "TMPDIR="+cmd.Dir)
	}
	base := ""
	for _, k := range splitList(c.EvalEnv) {
		if k == evaluator.EnvBaseURL && c.EvalBaseURL != "" {
			continue // the flag's value is passed below instead
		}
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
			if k == evaluator.EnvBaseURL {
				base = v
			}
		}
	}
	if c.EvalBaseURL != "" {
		base = c.EvalBaseURL
		cmd.Env = append(cmd.Env, evaluator.EnvBaseURL+"="+base)
	}
	if base != "" && cmd.Confine != nil {
		// A gateway on a port the sandbox does not open would look like an outage.
		port, err := evaluator.URLPort(base)
		if err != nil {
			log.Warn(name+": ANTHROPIC_BASE_URL has no port to allow; the command may not reach it", "error", err)
		} else {
			conf := *cmd.Confine
			conf.Policy.ConnectTCP = append(append([]uint16(nil), conf.Policy.ConnectTCP...), port)
			cmd.Confine = &conf
		}
	}
	return base
}
