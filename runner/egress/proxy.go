package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/countersign/countersign/runner/startstop"
)

// Defaults for the zero values of Config's limits.
const (
	DefaultHeaderTimeout  = 10 * time.Second
	DefaultDialTimeout    = 10 * time.Second
	DefaultIdleTimeout    = 60 * time.Second
	DefaultMaxHeaderBytes = 16 << 10
	DefaultMaxConns       = 256
)

// Dialer opens upstream connections. *net.Dialer satisfies it; the runner
// may inject one that routes, tests one that redirects.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// Resolver turns a name into addresses. *net.Resolver satisfies it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config is one run's egress policy and limits. Only Allow matters for
// policy; every other field has a safe default.
type Config struct {
	// Allow lists the host[:port] patterns this run may reach (see
	// ParseAllowlist). Empty denies everything.
	Allow []string
	// Sink receives every Entry as its connection ends. It is called from
	// the connection's goroutine, concurrently, and must not block long.
	// Nil keeps entries only in the Summary.
	Sink func(Entry)
	// Dialer opens upstream connections to the checked IP:port; default
	// a net.Dialer with DialTimeout.
	Dialer Dialer
	// Resolver resolves allowed names; default net.DefaultResolver.
	Resolver Resolver
	// HeaderTimeout bounds the time from accepting a connection (or from
	// the end of the previous request) to a complete request header.
	HeaderTimeout time.Duration
	// DialTimeout bounds resolving plus dialing, and waiting for a
	// forwarded request's response header.
	DialTimeout time.Duration
	// IdleTimeout closes keep-alive client connections idle this long.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request header (net/http adds 4 KiB slack).
	MaxHeaderBytes int
	// MaxEntries caps the entries kept for Summary; the rest are counted.
	MaxEntries int
	// MaxConns caps simultaneous client connections (open tunnels
	// included); further ones wait in the listen backlog until one ends.
	MaxConns int

	// allowInternal switches off the internal-address (DNS rebinding)
	// check. Tests only: it exists to show the attack works without it.
	allowInternal bool
}

// Proxy is one run's egress proxy: an HTTP CONNECT and forward proxy that
// reaches only allowlisted hosts and records every attempt. Create it with
// New, serve a listener with Start, end it with Stop. Its start and stop are the
// shared background-service base's.
type Proxy struct {
	startstop.Base

	cfg   Config
	allow *Allowlist
	rec   *recorder
	fwd   http.Handler // plain-HTTP forwarding, see forward.go

	mu      sync.Mutex
	srv     *http.Server
	tunnels map[net.Conn]struct{} // hijacked conns, closed by Stop
	// stopped is set, once, by halt: from then on no handler or tunnel begins, and
	// Start refuses (also after a Stop without Start).
	stopped bool
	wg      sync.WaitGroup // handlers and tunnels in flight
	conns   sync.Map       // net.Conn -> *connInfo, until closed
}

// New checks cfg and returns an unstarted proxy. The error names any bad
// allowlist pattern.
func New(cfg Config) (*Proxy, error) {
	allow, err := ParseAllowlist(cfg.Allow)
	if err != nil {
		return nil, err
	}
	setDefaults(&cfg)
	p := &Proxy{
		cfg:     cfg,
		allow:   allow,
		rec:     &recorder{sink: cfg.Sink, max: cfg.MaxEntries},
		tunnels: map[net.Conn]struct{}{},
	}
	p.fwd = p.newForwarder()
	return p, nil
}

func setDefaults(c *Config) {
	if c.HeaderTimeout <= 0 {
		c.HeaderTimeout = DefaultHeaderTimeout
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.MaxEntries <= 0 {
		c.MaxEntries = DefaultMaxEntries
	}
	if c.Dialer == nil {
		c.Dialer = &net.Dialer{Timeout: c.DialTimeout}
	}
	if c.Resolver == nil {
		c.Resolver = net.DefaultResolver
	}
}

// Allowlist returns the parsed allowlist the proxy enforces.
func (p *Proxy) Allowlist() *Allowlist { return p.allow }

// Start serves ln in the background until Stop is called or ctx ends; the
// proxy owns ln from here and closes it. It fails if the proxy was already
// started or stopped, leaving ln to the caller.
func (p *Proxy) Start(ctx context.Context, ln net.Listener) error {
	errStarted := errors.New("egress: proxy already started or stopped")
	if p.isStopped() {
		return errStarted
	}
	// The context in-flight resolves and dials run with: it ends at Stop.
	base, ok, started, stopped := p.StartInitOnce(ctx)
	if !ok {
		return errStarted
	}
	srv := &http.Server{
		Handler:           http.HandlerFunc(p.serveHTTP),
		ReadHeaderTimeout: p.cfg.HeaderTimeout,
		IdleTimeout:       p.cfg.IdleTimeout,
		MaxHeaderBytes:    p.cfg.MaxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return base },
		ConnContext:       p.connContext,
		ConnState:         p.connState,
		ErrorLog:          log.New(io.Discard, "", 0), // every attempt is an Entry instead
	}
	p.mu.Lock()
	if p.stopped { // a Stop came first: it found nothing to wait for
		p.mu.Unlock()
		stopped()
		return errStarted
	}
	p.srv = srv
	p.mu.Unlock()
	go func() {
		defer stopped()
		started()
		served := make(chan struct{})
		go func() {
			defer close(served)
			_ = srv.Serve(newLimitListener(ln, p.cfg.MaxConns))
		}()
		<-base.Done() // Stop, or ctx ended
		p.halt()
		<-served
		p.wg.Wait()
	}()
	return nil
}

// Stop closes the listener, every client connection and every open tunnel
// (no egress outlives its run), then waits for in-flight handlers to
// record their entries or for ctx to end. It is idempotent and safe to
// call concurrently; every call waits.
func (p *Proxy) Stop(ctx context.Context) error {
	p.halt()
	if err := p.Base.Stop(ctx); err != nil {
		return fmt.Errorf("egress: stop: %w", err)
	}
	return nil
}

// isStopped reports whether halt has run.
func (p *Proxy) isStopped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopped
}

// halt marks the proxy stopped and closes the server (its listener and client
// connections) and every tunnel; later calls do nothing. New handlers and
// tunnels are refused from here, so p.wg only goes down.
func (p *Proxy) halt() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	for c := range p.tunnels {
		_ = c.Close()
	}
	srv := p.srv
	p.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// Summary returns the totals and kept entries so far. Safe at any time.
func (p *Proxy) Summary() Summary { return p.rec.summary() }

// connInfo follows one client connection so one that never completes a
// request (slow, oversized or malformed header) still gets an Entry.
type connInfo struct {
	start  time.Time
	client string
	served bool // set by the handler; read after the conn has closed
	mu     sync.Mutex
}

type connKey struct{}

func (p *Proxy) connContext(ctx context.Context, c net.Conn) context.Context {
	info := &connInfo{start: time.Now(), client: c.RemoteAddr().String()}
	p.conns.Store(c, info)
	return context.WithValue(ctx, connKey{}, info)
}

func (p *Proxy) connState(c net.Conn, s http.ConnState) {
	if s != http.StateClosed && s != http.StateHijacked {
		return
	}
	v, ok := p.conns.LoadAndDelete(c)
	if !ok {
		return
	}
	info := v.(*connInfo)
	info.mu.Lock()
	served := info.served
	info.mu.Unlock()
	if !served {
		p.rec.record(Entry{
			Time: info.start, Client: info.client, Duration: time.Since(info.start),
			Reason: "closed before a complete request (header timeout, oversized or malformed header)",
		})
	}
}

// serveHTTP dispatches a proxy request: CONNECT opens a tunnel, an
// absolute-form http:// request is forwarded, anything else is refused.
// It is not exported: served by another server it would lose the header,
// connection and per-connection logging bounds Start sets up.
func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		http.Error(w, "egress proxy: stopped", http.StatusServiceUnavailable)
		return
	}
	p.wg.Add(1)
	p.mu.Unlock()
	defer p.wg.Done()
	if info, ok := r.Context().Value(connKey{}).(*connInfo); ok {
		info.mu.Lock()
		info.served = true
		info.mu.Unlock()
	}
	e := &Entry{Time: time.Now(), Client: r.RemoteAddr, Method: r.Method}
	defer func() {
		e.Duration = time.Since(e.Time)
		p.rec.record(*e)
	}()
	if r.Method == http.MethodConnect {
		p.serveConnect(w, r, e)
		return
	}
	p.serveForward(w, r, e)
}

// deny answers 403 with a body that says what was refused and why, and
// records the reason.
func deny(w http.ResponseWriter, e *Entry, status int, reason string) {
	e.Reason = reason
	e.Status = status
	w.Header().Set("Connection", "close")
	http.Error(w, "egress proxy: "+reason, status)
}
