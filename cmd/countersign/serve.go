package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/runner/sandbox"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/handlers/live"
	mcpserver "github.com/countersign/countersign/handlers/mcp"
	"github.com/countersign/countersign/handlers/pages"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/runner"
	"github.com/countersign/countersign/runner/demo"
	"github.com/countersign/countersign/runner/drift"
	"github.com/countersign/countersign/runner/ledger"
	"github.com/countersign/countersign/runner/watch"
)

// newService builds the governance service with the ledger's message composer.
func newService(db *store.DB) *models.Service {
	return models.NewService(db, ledger.Composer{})
}

// runServe is `countersign serve`: it opens the store and the ledger, starts the
// background services (and the runner, unless -no-runner), and serves the API, the
// dashboard and MCP until ctx is done, then stops them in reverse order.
func runServe(ctx context.Context, args []string, out io.Writer) error {
	c, hooks, deadlines, err := parseServe(args, out)
	if err != nil {
		return err
	}
	log, err := c.logger()
	if err != nil {
		return err
	}
	db, err := openStore(ctx, c)
	if err != nil {
		return err
	}
	defer db.Close()
	led, ledInfo, err := openLedger(c, db)
	if err != nil {
		return err
	}
	if cl, ok := led.(interface{ Close() error }); ok {
		defer cl.Close()
	}
	svc, signer, err := attestingService(c, db, ledInfo)
	if err != nil {
		return err
	}
	admin, err := firstRun(ctx, svc.Store(), svc.Agents)
	if err != nil {
		return err
	}
	s := &serving{c: c, log: log, db: db, svc: svc, deadlines: deadlines, ledInfo: ledInfo, attestKey: signer.PublicKeyPEM()}
	if admin != nil {
		s.people = append(s.people, *admin)
	}
	defer func() { stopAll(log, c.Grace+5*time.Second, s.stops) }()
	if err := s.startWatching(ctx); err != nil {
		return err
	}
	// Listening first tells the runner the port its confined workers may reach.
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return fmt.Errorf("flag -addr: %w", err)
	}
	defer ln.Close()
	if c.URL == "" {
		c.URL = selfURL(ln.Addr())
	}
	// Webhook deliveries run in goroutines of their own, beside the runner.
	stopHooks, err := startWebhooks(ctx, hooks, db, c.URL, log)
	if err != nil {
		return err
	}
	s.stops = append(s.stops, stopHooks)
	if err := s.startRunning(ctx, led); err != nil {
		return err
	}
	base := hooks.PublicURL
	if base == "" {
		base = c.URL
	}
	forgeSync, stopForges, err := startForgeSync(ctx, &hooks.Forge, svc, s.workspaces, base, log)
	if err != nil {
		return err
	}
	s.stops = append(s.stops, stopForges)
	if forgeSync != nil {
		s.forgeSync = forgeSync
	}
	srv := s.handler()
	printSignIns(out, c.URL, s.people)
	log.Info("countersign serving", "url", "http://"+ln.Addr().String(), "database", db.Dialect(), "data_dir", c.DataDir)
	return serveUntilDone(ctx, log, ln, srv, c.Grace)
}

// parseServe reads serve's flags (and their environment defaults).
func parseServe(args []string, out io.Writer) (*config, *webhookConfig, models.Deadlines, error) {
	var c config
	fs := newFlags("serve", "serve [flags]", out)
	storeFlags(fs, &c)
	fs.StringVar(&c.Addr, "addr", envOr("127.0.0.1:8080", "COUNTERSIGN_ADDR"), "address to listen on (env COUNTERSIGN_ADDR)")
	demoDefault, err := envBool("COUNTERSIGN_DEMO", false)
	if err != nil {
		return nil, nil, nil, err
	}
	fs.BoolVar(&c.Demo, "demo", demoDefault, "seed demo worker agents, a template and a goal on an empty database (env COUNTERSIGN_DEMO)")
	fs.BoolVar(&c.NoRunner, "no-runner", false, "serve without the runner pool and publisher")
	secure, err := envBool("COUNTERSIGN_SECURE_COOKIES", false)
	if err != nil {
		return nil, nil, nil, err
	}
	fs.BoolVar(&c.SecureCookies, "secure-cookies", secure, "mark the session cookie Secure (behind TLS) (env COUNTERSIGN_SECURE_COOKIES)")
	metricsPublic, err := envBool("COUNTERSIGN_METRICS_PUBLIC", false)
	if err != nil {
		return nil, nil, nil, err
	}
	fs.BoolVar(&c.MetricsPublic, "metrics-public", metricsPublic, "serve /metrics without a bearer token (env COUNTERSIGN_METRICS_PUBLIC)")
	if err := runnerFlags(fs, &c); err != nil {
		return nil, nil, nil, err
	}
	var hooks webhookConfig
	if err := webhookFlags(fs, &hooks); err != nil {
		return nil, nil, nil, err
	}
	if err := forgeSyncFlags(fs, &hooks.Forge); err != nil {
		return nil, nil, nil, err
	}
	fs.StringVar(&c.Deadlines, "inbox-deadlines", envOr("", "COUNTERSIGN_INBOX_DEADLINES"), "how long each kind of inbox item may wait before it is announced again and escalated to the lead, over the defaults ("+models.DefaultDeadlines.String()+"): kind=duration,… or kind=off; a question unanswered for twice its deadline blocks its task (env COUNTERSIGN_INBOX_DEADLINES)")
	if err := fs.Parse(args); err != nil {
		return nil, nil, nil, err
	}
	deadlines, err := models.ParseDeadlines(c.Deadlines)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("flag -inbox-deadlines: %w", err)
	}
	if fs.NArg() > 0 {
		return nil, nil, nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return &c, &hooks, deadlines, nil
}

// serving is what runServe has opened and started, handed from one step to the
// next; stops are stopped in reverse order when it returns.
type serving struct {
	c         *config
	log       *slog.Logger
	db        *store.DB
	svc       *models.Service
	deadlines models.Deadlines
	ledInfo   ledger.Info
	attestKey []byte // the attestations' public key (PEM)
	stops     []func(context.Context) error
	// people are the persons this start created, with their one-time passwords: the
	// first admin and the demo's people, printed once the address is known.
	people []demo.Person

	// startWatching
	hub     *live.Hub
	metrics *handlers.Metrics

	// startRunning: what the pages and the API read of the runner, all nil without
	// one here.
	sb            *sandbox.Sandbox
	policy        func(*models.Agent) []string
	lander        models.Lander
	usage         func() (int64, error)
	gatewayStatus func() models.GatewayStatus
	recheck       *drift.Rechecker
	workspaces    forgeWorkspaces // the pool's, pushed from by the forge sync

	forgeSync handlers.ForgeDeliverer // nil when off
}

// startWatching starts what runs with or without a runner here: the live hub, the
// metrics, the inbox watcher and the demo's seeding.
func (s *serving) startWatching(ctx context.Context) error {
	s.hub = live.New(s.db, s.log, live.Options{})
	if err := s.hub.Start(ctx); err != nil {
		return err
	}
	s.stops = append(s.stops, s.hub.Stop)
	s.metrics = handlers.NewMetrics(s.db, s.hub.Clients)
	// Nothing waits unseen: overdue inbox items are escalated, with or without a runner here.
	watcher := watch.New(s.svc.Inbox, s.deadlines, 0, s.log)
	if err := watcher.Start(ctx); err != nil {
		return err
	}
	s.stops = append(s.stops, watcher.Stop)
	if s.c.Demo {
		people, err := demo.Seed(ctx, s.svc, s.c.DataDir)
		if err != nil {
			return fmt.Errorf("seeding the demo: %w", err)
		}
		s.people = append(s.people, people...)
	}
	return nil
}

// startRunning opens the sandbox and, unless -no-runner, starts the publisher, and
// the runner pool and the rechecker when the sandbox can start workers.
func (s *serving) startRunning(ctx context.Context, led ledger.Ledger) error {
	c := s.c
	sb, err := openSandbox(c, s.log)
	if err != nil {
		return err
	}
	s.sb = sb
	if !c.NoRunner {
		stopPub, err := startPublisher(ctx, c, s.db, led, s.log)
		if err != nil {
			return err
		}
		s.stops = append(s.stops, stopPub)
	}
	if !c.NoRunner && sb.Ready() {
		pool, err := startRunner(ctx, c, s.db, s.svc, sb, s.log, runnerHooks{OnLog: s.hub.PublishLog, Observer: s.metrics})
		if err != nil {
			return err
		}
		s.stops = append(s.stops, pool.Stop)
		s.policy, s.lander, s.usage, s.gatewayStatus = pool.EffectivePolicy, pool.Landing(), pool.WorkspaceUsage, pool.GatewayStatus
		s.workspaces = pool.Workspaces()
		// Rechecks read the workspaces, which live where the runner runs.
		if s.recheck, err = startRechecker(ctx, c, s.svc, s.log); err != nil {
			return err
		}
		s.stops = append(s.stops, s.recheck.Stop)
	}
	return nil
}

// handler is the whole HTTP surface: the API, the dashboard, the live hub and MCP.
func (s *serving) handler() http.Handler {
	c, svc, log, sb, hub := s.c, s.svc, s.log, s.sb, s.hub
	// Kept files are read from the data dir, with or without a runner here.
	deliverables := runner.NewDeliverableFiles(filepath.Join(c.DataDir, "work"))
	dashboard := pages.New(pages.Deps{Service: svc, Log: log, Version: version, SecureCookies: c.SecureCookies,
		Ledger: s.ledInfo, Banner: sandboxBanner(sb), SandboxPolicy: s.policy, Lander: s.lander, WorkspaceUsage: s.usage, Gateway: s.gatewayStatus,
		Deliverables: deliverables, Recheck: s.recheck, Deadlines: s.deadlines})
	mcpHandler := mcpserver.New(svc, log, version)
	return handlers.NewServer(handlers.Deps{
		Service: svc, Log: log, Version: version, Metrics: s.metrics.Handler(), MetricsPublic: c.MetricsPublic, Ledger: s.ledInfo, HTML: dashboard.ErrorPage,
		Workers: func() (bool, string) { return sb.Ready(), sb.Status() },
		Lander:  s.lander, Deliverables: deliverables, AttestationKey: s.attestKey, ForgeSync: s.forgeSync,
		Extra: []func(*echo.Echo){
			dashboard.Routes,
			hub.Register,
			func(e *echo.Echo) { mcpserver.Register(e, mcpHandler) },
		},
	})
}

// serveUntilDone serves srv on ln until ctx is done, then shuts it down within the
// grace period.
func serveUntilDone(ctx context.Context, log *slog.Logger, ln net.Listener, srv http.Handler, grace time.Duration) error {
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), grace+5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// stopAll stops background work in reverse order of starting, within timeout.
func stopAll(log *slog.Logger, timeout time.Duration, stops []func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for i := len(stops) - 1; i >= 0; i-- {
		if err := stops[i](ctx); err != nil {
			log.Error("stopping", "err", err)
		}
	}
}

// firstRun creates the first administrator on a database without people, with a
// one-time password, and returns it (nil when there are people already): printed
// once by printSignIns, it is the only way in.
func firstRun(ctx context.Context, store models.Store, creator agentCreator) (*demo.Person, error) {
	agents, err := store.ListAgents(ctx)
	if err != nil {
		return nil, err
	}
	for _, a := range agents {
		if a.Kind == models.KindHuman {
			return nil, nil
		}
	}
	password := models.NewPassword()
	admin := &models.Agent{Name: "admin", Kind: models.KindHuman, Roles: []string{models.RoleAdmin, models.RoleLead, models.RoleExec}}
	if err := creator.CreateAgent(ctx, models.System, admin, password); err != nil {
		return nil, err
	}
	return &demo.Person{Name: admin.Name, Roles: admin.Roles, Password: password}, nil
}

// printSignIns prints, once the server's address is known, how each person created
// on this start signs in: "Sign in at URL as NAME with password PASSWORD (roles …)".
func printSignIns(out io.Writer, url string, people []demo.Person) {
	if len(people) == 0 {
		return
	}
	fmt.Fprintln(out, "\nFirst start: one-time passwords, shown only now (change them on your agent page, or with `countersign agent password NAME`):")
	for _, p := range people {
		fmt.Fprintf(out, "Sign in at %s as %s with password %s (roles %s)\n", url, p.Name, p.Password, strings.Join(p.Roles, ", "))
	}
	fmt.Fprintln(out)
}

// selfURL is how a process on this machine reaches the listener at addr: a wildcard
// address becomes the loopback one.
func selfURL(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return "http://" + addr.String()
	}
	host := tcp.IP
	if host == nil || host.IsUnspecified() {
		host = net.IPv4(127, 0, 0, 1)
	}
	return "http://" + net.JoinHostPort(host.String(), strconv.Itoa(tcp.Port))
}

// sandboxBanner is the warning every page shows while workers run unconfined or cannot
// start; nil when the sandbox confines them.
func sandboxBanner(sb *sandbox.Sandbox) func() string {
	if sb.Enabled() && sb.Ready() {
		return nil
	}
	return sb.Status
}

// startRechecker returns the rechecker the Recheck buttons use, its periodic pass
// started when c sets an interval.
func startRechecker(ctx context.Context, c *config, svc *models.Service, log *slog.Logger) (*drift.Rechecker, error) {
	rc := drift.NewRechecker(svc.Store(), svc.Tasks, c.RecheckEvery, log)
	runnerAgent, err := svc.Agents.RunnerAgent(ctx)
	if err != nil {
		return nil, err
	}
	return rc, rc.Start(ctx, runnerAgent)
}
