// Package pages serves the dashboard: server-rendered templ pages behind a session
// login and CSRF tokens. Handlers parse, call the governance service, render, and
// return errors to the central error handler; rules are enforced by the service, and
// the pages only decide which buttons to show.
package pages

import (
	"github.com/countersign/countersign/runner/drift"
	"log/slog"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/ledger"
)

// Deps are what the pages are built from.
type Deps struct {
	Service *models.Service
	Log     *slog.Logger
	Version string
	// SecureCookies marks the session cookie Secure (set it behind TLS).
	SecureCookies bool
	// Ledger describes the ledger for the ledger page: "local" or "hcs", and for
	// HCS the network and topic, to build HashScan links.
	Ledger ledger.Info
	// Banner, when set, returns a warning every page shows while it holds (the sandbox
	// off or unavailable); nil shows none.
	Banner func() string
	// SandboxPolicy, when set, describes what a worker agent's confined processes may
	// touch, for the agent page (admins only); nil shows nothing.
	SandboxPolicy func(*models.Agent) []string
	// Lander merges verified task branches and reports on them (the runner's); nil
	// shows no branch and refuses merges.
	Lander models.Lander
	// WorkspaceUsage, when set, measures the disk the task workspaces use, for the
	// agents page; nil shows nothing.
	WorkspaceUsage func() (int64, error)
	// Gateway, when set, reports the runner's model gateway and its runs' network,
	// for the agents page; nil shows nothing (no runner in this server).
	Gateway func() models.GatewayStatus
	// Deliverables reads the kept files of tasks' deliverables; nil lists them on the
	// task page without download links that work.
	Deliverables models.DeliverableStore
	// Recheck compares verified tasks' work with their fingerprints for the Recheck
	// buttons; nil refuses them (a server without the runner).
	Recheck *drift.Rechecker
	// Deadlines are the inbox kinds' deadlines, for the inbox's due dates;
	// models.DefaultDeadlines when nil.
	Deadlines models.Deadlines
}

// Pages is the dashboard.
type Pages struct {
	d       Deps
	svc     services   // the aggregates of d.Service the pages call
	limiter *limiter   // failed sign-ins per client address
	counts  countCache // task counts per goal, valid until the next event
	queues  queueCache // each person's queue count, valid until the next event
	usage   usageCache // the workspaces' disk usage, measured at most every usageTTL
}

// New returns the dashboard over d. A nil Log discards.
func New(d Deps) *Pages {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Deadlines == nil {
		d.Deadlines = models.DefaultDeadlines
	}
	return &Pages{d: d, svc: newServices(d.Service), limiter: newLimiter(loginBurst, loginWindow)}
}

// Routes registers every page: the public ones (static files, login), then the
// signed-in ones behind the session and CSRF middleware, in two lists: the core pages
// (overview, goals, tasks, inbox) and the editing pages (templates, rules, agents,
// ledger).
func (p *Pages) Routes(e *echo.Echo) {
	p.publicRoutes(e)
	g := e.Group("", p.requireSession, p.checkCSRF)
	p.coreRoutes(g)
	p.adminRoutes(g)
	p.deliverableRoutes(g)
}
