package handlers

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/ledger"
)

// Deps are what the HTTP server is built from.
type Deps struct {
	Service *models.Service
	Log     *slog.Logger
	Version string
	// Metrics serves /metrics; nil leaves the route out. It needs a bearer token (any
	// agent's, not an attempt token) unless MetricsPublic is set.
	Metrics       http.Handler
	MetricsPublic bool
	// Ledger describes the ledger for HashScan links.
	Ledger ledger.Info
	// HTML renders error pages for browsers; nil renders JSON everywhere.
	HTML HTMLErrorRenderer
	// Workers says whether workers can start and what confines them, for /readyz; nil
	// leaves it out.
	Workers func() (ready bool, status string)
	// Lander merges verified task branches (the runner's); nil refuses merges.
	Lander models.Lander
	// Deliverables reads the kept files of tasks' deliverables; nil serves manifests
	// only.
	Deliverables models.DeliverableStore
	// ForgeSync receives the forges' webhook deliveries; nil answers them 404.
	ForgeSync ForgeDeliverer
	// AttestationKey is the PEM public key of the attestations this server signs
	// (runner/attest); nil when it signs none.
	AttestationKey []byte
	// Extra registers the routes of the dashboard, WebSocket and MCP server, which
	// live in their own files and packages; each is listed in Routes' doc.
	Extra []func(e *echo.Echo)
}

// MaxBodyBytes is the largest request body the server reads (2 MiB); a larger one is
// refused with 413 and code ETOOLARGE, whether its Content-Length says so or the body
// turns out longer while it is read.
const MaxBodyBytes = 2 << 20

// NewServer returns the Echo server with every route, the central error handler and
// the common middleware (recover, body limit, the input boundary that refuses text
// the store cannot hold, security headers, request log).
func NewServer(d Deps) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = NewErrorHandler(d.Log, d.HTML).Handle
	e.Use(middleware.Recover())
	e.Use(middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{Limit: strconv.Itoa(MaxBodyBytes>>20) + "M"}))
	e.Use(inputBoundary)
	e.Use(securityHeaders)
	e.Use(requestLog(d.Log))
	Routes(e, d)
	for _, f := range d.Extra {
		f(e)
	}
	return e
}

// Routes registers the JSON API and the operations endpoints:
//
//	GET  /healthz, /readyz, /metrics (bearer token unless Deps.MetricsPublic)
//	/api/v1: agents and their tokens, forges (api_forges.go), templates, rules, goals, tasks and their actions,
//	inbox, events, ledger, attestations.
//
// The dashboard pages, /ws and /mcp are registered by Deps.Extra.
func Routes(e *echo.Echo, d Deps) {
	st := d.Service.Store()
	ops := NewOpsHandler(st, d.Version, d.Workers)
	e.GET("/healthz", ops.Health)
	e.GET("/readyz", ops.Ready)
	if d.Metrics != nil {
		if d.MetricsPublic {
			e.GET("/metrics", ShapeErrors(d.Metrics))
		} else {
			e.GET("/metrics", ShapeErrors(d.Metrics), BearerAuth(d.Service.Tokens))
		}
	}

	NewForgeWebhookAPI(d.ForgeSync).Register(e)
	api := e.Group("/api/v1", BearerAuth(d.Service.Tokens))
	agents := NewAgentsAPI(st, d.Service.Agents, d.Service.Tokens, d.Service.Stats, d.Service.Now)
	api.GET("/agents", agents.List)
	api.POST("/agents", agents.Create)
	api.PATCH("/agents/:name", agents.Update)
	api.PUT("/agents/:name/password", agents.SetPassword)
	api.GET("/agents/:name/tokens", agents.Tokens)
	api.GET("/agents/:name/stats", agents.Stats)
	NewCanaryAPI(st, d.Service.Tasks, d.Service.Stats).Register(api)
	api.DELETE("/tokens/:id", agents.RevokeToken)
	if forges, err := models.NewForges(d.Service); err == nil { // a store without forges serves none
		NewForgesAPI(forges).Register(api)
	}

	tpl := NewTemplatesAPI(st, d.Service.Templates)
	api.GET("/templates", tpl.List)
	api.POST("/templates", tpl.Create)
	api.GET("/templates/:name", tpl.Get)
	api.GET("/rules", tpl.GetRules)
	api.PUT("/rules", tpl.PutRules)

	goals := NewGoalsAPI(st, d.Service.Goals, d.Service.Templates)
	api.POST("/goals", goals.Create)
	api.GET("/goals", goals.List)
	api.GET("/goals/:id", goals.Get)
	api.POST("/goals/:id/verify", goals.Verify)
	api.POST("/goals/:id/reject", goals.Reject)
	api.POST("/goals/:id/runs", goals.StartRun)
	merge := NewMergeAPI(d.Service.Merges, d.Lander)
	api.POST("/goals/:id/merge", merge.Goal)
	budgets := NewBudgetAPI(d.Service.Tasks, d.Service.Goals)
	api.POST("/goals/:id/budget", budgets.Goal)
	api.POST("/tasks/:id/budget", budgets.Task)

	tasks := NewTasksAPI(st, d.Service.Tasks, d.Service.Goals)
	api.POST("/tasks", tasks.Create)
	api.GET("/tasks", tasks.List)
	api.GET("/tasks/:id", tasks.Get)
	api.POST("/tasks/:id/link", tasks.Link)
	api.POST("/tasks/:id/questions", tasks.Ask)
	api.GET("/tasks/:id/branch", merge.Branch)
	api.POST("/tasks/:id/merge", merge.Task)
	NewDeliverableAPI(st, d.Deliverables).Register(api)
	NewAdvisoryAPI(d.Service.Tasks).Register(api)
	NewOutputAPI(st, d.Deliverables).Register(api)
	NewAttestationAPI(d.Service.Ledger, d.AttestationKey).Register(api)
	api.POST("/tasks/:id/:action", tasks.Act)

	feed := NewFeedAPI(st)
	api.GET("/inbox", feed.Inbox)
	api.POST("/inbox/:id/resolve", NewInboxAPI(d.Service.Inbox).Resolve)
	api.GET("/events", feed.Events)

	led := NewLedgerAPI(st, d.Ledger)
	api.GET("/ledger", led.List)
	api.GET("/ledger/:id", led.Message)
	api.GET("/ledger/:id/payload", led.Payload)
}

// securityHeaders sets headers every response should carry.
func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'")
		return next(c)
	}
}

// requestLog logs each request at debug level and server errors at error level,
// without headers or bodies (they may carry tokens).
func requestLog(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			if err != nil {
				c.Error(err)
			}
			status := c.Response().Status
			lvl := slog.LevelDebug
			if status >= 500 {
				lvl = slog.LevelError
			}
			log.Log(c.Request().Context(), lvl, "http", "method", c.Request().Method, "path", c.Request().URL.Path,
				"status", status, "ms", time.Since(start).Milliseconds())
			return nil
		}
	}
}
