package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httputil"
	"strconv"
	"sync"
	"time"

	"github.com/countersign/countersign/models"
)

// Gateway is the model gateway: an http.Handler that forwards the calls of live
// credentials to the providers with the real keys, meters them, and holds them to
// their caps. Safe for concurrent use.
type Gateway struct {
	cfg       Config
	anthropic *upstream
	openai    *upstream
	gemini    *upstream
	proxy     *httputil.ReverseProxy
	ledger    ledger

	mu     sync.RWMutex
	leases map[[sha256.Size]byte]*Lease

	prices sync.Map // model name → priceLookup, since models.PriceOf compiles patterns

	// noReserve is a test switch that turns the reservation off (calls are only
	// settled after the fact), to show what the budget test catches without it.
	noReserve bool
	// bufferAll and holdNothing are test switches on the streamed request body:
	// read every body whole before forwarding it, or send a body's last byte
	// before the call is admitted.
	bufferAll, holdNothing bool
}

type priceLookup struct {
	price models.ModelPrice
	ok    bool
}

// New builds a gateway for cfg; an error says what in cfg is wrong.
func New(cfg Config) (*Gateway, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	gw := &Gateway{cfg: cfg, leases: map[[sha256.Size]byte]*Lease{}}
	if gw.anthropic, err = parseUpstream("anthropic", cfg.Anthropic); err != nil {
		return nil, err
	}
	if gw.openai, err = parseUpstream("openai", cfg.OpenAI); err != nil {
		return nil, err
	}
	if gw.gemini, err = parseUpstream("gemini", cfg.Gemini); err != nil {
		return nil, err
	}
	gw.proxy = gw.newProxy()
	return gw, nil
}

// CapState reads the shared pool of the cap key; false when no live credential
// names it.
func (gw *Gateway) CapState(key string) (CapState, bool) { return gw.ledger.state(key) }

// ServeHTTP serves the providers' endpoints to live credentials: a call is
// authenticated, reserved against its caps, forwarded with the real key, and
// settled to its metered cost when its response ends. HEAD / answers 200 without a
// credential (Claude Code's reachability check).
func (gw *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/" && (r.Method == http.MethodHead || r.Method == http.MethodGet) {
		w.WriteHeader(http.StatusOK)
		return
	}
	rt, ok := routeOf(r)
	if !ok || gw.upstreamOf(rt.provider) == nil {
		writeRefusal(w, rt.provider, refuseNotFound, fmt.Sprintf("%s %s is not served by the Countersign gateway", r.Method, r.URL.Path))
		return
	}
	l := gw.lookup(r)
	if l == nil {
		writeRefusal(w, rt.provider, refuseAuth, deadCredential(rt.provider))
		return
	}
	if r.ContentLength > gw.cfg.MaxRequestBytes {
		gw.refuse(w, l, rt.provider, errTooLarge)
		return
	}
	// A metered call under a spent cap is refused before anything goes upstream: a
	// streamed body is admitted only once the upstream has been reached, and a
	// worker must hear "budget", not an unreachable provider.
	if key := gw.ledger.exhausted(l.pools); key != "" && rt.kind.metered() {
		gw.refuse(w, l, rt.provider, &budgetError{key: key, spent: true})
		return
	}
	// A Chat call's body may need rewriting (see withStreamUsage), so it is read
	// whole first; every other body streams on while the gateway reads it.
	if rt.kind == kindChat || r.ContentLength == 0 || gw.bufferAll {
		gw.serveBuffered(w, r, l, rt)
		return
	}
	gw.serveStreamed(w, r, l, rt)
}

// serveBuffered reads the call's body, admits the call, then forwards it. The body
// is read before the call begins, so that Revoke never waits on a client still
// sending one.
func (gw *Gateway) serveBuffered(w http.ResponseWriter, r *http.Request, l *Lease, rt route) {
	body, err := readBody(r, gw.cfg.MaxRequestBytes)
	if err != nil {
		gw.refuse(w, l, rt.provider, err)
		return
	}
	gw.serveCall(w, r, l, rt, func(ctx context.Context, c *call, out *http.Request) error {
		if body, err = gw.admit(ctx, c, body); err != nil {
			return err
		}
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		out.ContentLength = int64(len(body))
		out.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	})
}

// serveStreamed forwards the call while its body arrives, admitting it when the
// body ends (see heldBody). A refusal then reaches the proxy as the body's error,
// and proxyError answers it.
func (gw *Gateway) serveStreamed(w http.ResponseWriter, r *http.Request, l *Lease, rt route) {
	var body *heldBody
	gw.serveCall(w, r, l, rt, func(ctx context.Context, c *call, out *http.Request) error {
		body = newHeldBody(r.Body, r.ContentLength, gw.cfg.MaxRequestBytes,
			func(b []byte) error {
				_, err := gw.admit(ctx, c, b) // never rewritten: not a Chat call
				return err
			},
			func(err error) {
				switch {
				case l.ctx.Err() != nil:
					err = errRevoked
				case ctx.Err() != nil:
					err = ctx.Err() // the worker hung up: no one to answer
				}
				c.refuse(err)
			})
		body.holdNothing = gw.holdNothing
		out.Body, out.GetBody = body, nil
		return nil
	})
	if body == nil { // a dead credential: the call never began
		return
	}
	body.release()
	if !body.done.Load() {
		// The upstream answered before the body ended: the transport may still be
		// reading it, so end that read rather than wait on the worker.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
}

// serveCall runs one call of l: it begins it (a dead credential is refused), ties
// it to the lease (Revoke ends it, a wait for room or a body still arriving
// included), lets prepare give the outgoing request its body, and proxies it. The
// call is settled when serveCall returns.
func (gw *Gateway) serveCall(w http.ResponseWriter, r *http.Request, l *Lease, rt route,
	prepare func(ctx context.Context, c *call, out *http.Request) error) {
	if !l.begin() {
		writeRefusal(w, rt.provider, refuseAuth, deadCredential(rt.provider))
		return
	}
	defer l.end()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(l.ctx, cancel)()
	rc := http.NewResponseController(w)
	defer context.AfterFunc(ctx, func() { _ = rc.SetReadDeadline(time.Now()) })()
	c := &call{lease: l, gw: gw, route: rt}
	out := r.Clone(context.WithValue(ctx, callKey{}, c))
	if err := prepare(ctx, c, out); err != nil {
		gw.refuse(w, l, rt.provider, err)
		return
	}
	gw.proxy.ServeHTTP(w, out)
	// A no-op unless the proxy left the call unsettled (it settles every response
	// and error it sees): then the call is charged its reservation, to be safe.
	c.settle(Tokens{}, false, true)
}

// deadCredential is the refusal's message for a dead or unknown credential, naming
// the header p's clients send it in.
func deadCredential(p Provider) string {
	h := "x-api-key"
	switch p {
	case OpenAI:
		h = "API key"
	case Gemini:
		h = "API key (x-goog-api-key or key=)"
	}
	return "invalid " + h + ": the credential is unknown or no longer live"
}

// budgetError refuses a call for a cap without room.
type budgetError struct {
	key       string
	needUSD   float64
	model     string
	maxOutput int64
	spent     bool // the cap has nothing left: no call would fit
}

func (e *budgetError) Error() string {
	if e.spent {
		return fmt.Sprintf("Countersign budget %s is spent: it has no room for any call.", e.key)
	}
	return fmt.Sprintf("Countersign budget %s has no room for this call (up to $%.4f for %s with up to %d output tokens).",
		e.key, e.needUSD, e.model, e.maxOutput)
}

// refuse answers a call the gateway will not forward and counts it.
func (gw *Gateway) refuse(w http.ResponseWriter, l *Lease, p Provider, err error) {
	var be *budgetError
	why, key := refuseBadCall, ""
	if errors.As(err, &be) {
		why, key = refuseBudget, be.key
	}
	l.refused(key)
	gw.cfg.Log.Info("gateway refused a call", "provider", p.String(), "reason", err.Error())
	writeRefusal(w, p, why, err.Error())
}

// admit parses a call's body and reserves its worst case against the lease's
// caps; the body returned is the one to forward (a streamed Chat call's asks for
// its usage). An admitted call is counted as forwarded.
func (gw *Gateway) admit(ctx context.Context, c *call, body []byte) ([]byte, error) {
	var model string
	var price models.ModelPrice
	var priced bool
	var worst, held float64
	if c.route.kind.metered() {
		req, fields, err := gw.parse(c.route, body)
		if err != nil {
			return nil, err
		}
		if c.route.kind == kindChat && req.Stream && !req.includesUsage() {
			if body, err = withStreamUsage(body, fields); err != nil {
				return nil, err
			}
		}
		model = req.Model
		price, priced = gw.priceOf(model)
		if !priced && len(c.lease.pools) > 0 {
			return nil, fmt.Errorf("model %q has no price in Countersign, so its calls cannot be held to the budget", model)
		}
		if priced {
			if worst, held, err = gw.reserve(ctx, c.lease.pools, model, price, len(body), req.maxOutput(gw.cfg.DefaultMaxOutputTokens)); err != nil {
				return nil, err
			}
		}
	}
	if err := c.admit(model, price, priced, worst, held); err != nil {
		gw.ledger.settle(c.lease.pools, held, 0)
		return nil, err
	}
	c.lease.forwarded()
	return body, nil
}

// reserve holds a call's worst case against the caps' pools: its input estimated
// from the body's size at the dearer of the input and cache-write prices, and its
// output limit at the output price. It returns the worst case and what it holds.
func (gw *Gateway) reserve(ctx context.Context, pools []*pool, model string, price models.ModelPrice, bodyBytes int, maxOutput int64) (worst, held float64, err error) {
	in := math.Ceil(float64(bodyBytes) / gw.cfg.BytesPerToken)
	worst = (in*math.Max(price.InputPerMTok, price.CacheWritePerMTok) + float64(maxOutput)*price.OutputPerMTok) / 1e6
	held = worst
	if gw.noReserve {
		held = 0 // the naive check: refuse only once a cap is already spent
	}
	if key, ok := gw.ledger.reserve(ctx, pools, held); !ok {
		if ctx.Err() != nil { // the client left or the credential was revoked while it waited
			return 0, 0, fmt.Errorf("the call ended while it waited for room under budget %s: %w", key, ctx.Err())
		}
		return 0, 0, &budgetError{key: key, needUSD: worst, model: model, maxOutput: maxOutput}
	}
	return worst, held, nil
}

// priceOf is the price of model, cached.
func (gw *Gateway) priceOf(model string) (models.ModelPrice, bool) {
	if v, ok := gw.prices.Load(model); ok {
		p := v.(priceLookup)
		return p.price, p.ok
	}
	p, ok := models.PriceOf(gw.cfg.Prices, model)
	gw.prices.Store(model, priceLookup{p, ok})
	return p, ok
}

// parse reads a metered call's body: Gemini's by its generationConfig (the model is
// the path's), the others' by their top-level members.
func (gw *Gateway) parse(rt route, body []byte) (wireRequest, map[string]span, error) {
	if rt.kind == kindGenerate {
		req, err := parseGemini(rt.model, body)
		return req, nil, err
	}
	return parseRequest(rt.kind, body)
}

// upstreamOf is p's upstream, nil when not configured.
func (gw *Gateway) upstreamOf(p Provider) *upstream {
	switch p {
	case OpenAI:
		return gw.openai
	case Gemini:
		return gw.gemini
	}
	return gw.anthropic
}
