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
	// The body is read before the call begins, so that Revoke never waits on a
	// client still sending one.
	body, err := readBody(r, gw.cfg.MaxRequestBytes)
	if err != nil {
		gw.refuse(w, l, rt.provider, err)
		return
	}
	if !l.begin() {
		writeRefusal(w, rt.provider, refuseAuth, deadCredential(rt.provider))
		return
	}
	defer l.end()
	// The call, its wait for room included, dies with the lease: Revoke ends it.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(l.ctx, cancel)()
	c, body, err := gw.prepare(ctx, l, rt, body)
	if err != nil {
		gw.refuse(w, l, rt.provider, err)
		return
	}
	gw.forward(w, r.WithContext(context.WithValue(ctx, callKey{}, c)), l, c, body)
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

// forward sends r (with body) upstream under the call c; c is settled when it
// returns.
func (gw *Gateway) forward(w http.ResponseWriter, r *http.Request, l *Lease, c *call, body []byte) {
	out := r.Clone(r.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	out.ContentLength = int64(len(body))
	out.Header.Set("Content-Length", strconv.Itoa(len(body)))
	l.forwarded()
	gw.proxy.ServeHTTP(w, out)
	// A no-op unless the proxy left the call unsettled (it settles every response
	// and error it sees): then the call is charged its reservation, to be safe.
	c.settle(Tokens{}, false, true)
}

// budgetError refuses a call for a cap without room.
type budgetError struct {
	key       string
	needUSD   float64
	model     string
	maxOutput int64
}

func (e *budgetError) Error() string {
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

// prepare parses a metered call's body and reserves its worst case against the
// lease's caps. The body returned is the one to forward.
func (gw *Gateway) prepare(ctx context.Context, l *Lease, rt route, body []byte) (*call, []byte, error) {
	c := &call{lease: l, gw: gw, route: rt}
	if !rt.kind.metered() {
		c.settled = true
		return c, body, nil
	}
	req, fields, err := gw.parse(rt, body)
	if err != nil {
		return nil, nil, err
	}
	if rt.kind == kindChat && req.Stream && !req.includesUsage() {
		if body, err = withStreamUsage(body, fields); err != nil {
			return nil, nil, err
		}
	}
	c.model = req.Model
	c.price, c.priced = gw.priceOf(req.Model)
	if !c.priced && len(l.pools) > 0 {
		return nil, nil, fmt.Errorf("model %q has no price in Countersign, so its calls cannot be held to the budget", req.Model)
	}
	if err := gw.reserve(ctx, c, len(body), req.maxOutput(gw.cfg.DefaultMaxOutputTokens)); err != nil {
		return nil, nil, err
	}
	return c, body, nil
}

// reserve holds a call's worst case against its lease's caps: its input estimated
// from the body's size at the dearer of the input and cache-write prices, and its
// output limit at the output price.
func (gw *Gateway) reserve(ctx context.Context, c *call, bodyBytes int, maxOutput int64) error {
	if !c.priced {
		return nil
	}
	in := math.Ceil(float64(bodyBytes) / gw.cfg.BytesPerToken)
	worst := (in*math.Max(c.price.InputPerMTok, c.price.CacheWritePerMTok) + float64(maxOutput)*c.price.OutputPerMTok) / 1e6
	hold := worst
	if gw.noReserve {
		hold = 0 // the naive check: refuse only once a cap is already spent
	}
	if key, ok := gw.ledger.reserve(ctx, c.lease.pools, hold); !ok {
		if ctx.Err() != nil { // the client left or the credential was revoked while it waited
			return fmt.Errorf("the call ended while it waited for room under budget %s: %w", key, ctx.Err())
		}
		return &budgetError{key: key, needUSD: worst, model: c.model, maxOutput: maxOutput}
	}
	c.worst, c.held = worst, hold
	return nil
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
