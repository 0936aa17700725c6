package egress

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"sync/atomic"
)

// forwardKey carries the connection open already checked and dialed, for
// the transport to use instead of dialing the name itself.
type forwardKey struct{}

// preDialed hands one checked connection to the transport exactly once.
type preDialed struct {
	once sync.Once
	conn *countingConn
}

// newForwarder builds the plain-HTTP forwarder: net/http/httputil's
// ReverseProxy (which drops hop-by-hop and Proxy-* headers and adds no
// X-Forwarded-For) over a transport that never dials on its own: it takes
// the connection serveForward opened after the policy check, and keeps
// none alive, so each request's bytes are counted on its own connection.
func (p *Proxy) newForwarder() http.Handler {
	tr := &http.Transport{
		Proxy: nil, // never chain to the runner's own proxy settings
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			pd, ok := ctx.Value(forwardKey{}).(*preDialed)
			if !ok {
				return nil, errors.New("egress: no checked connection for this request")
			}
			var c net.Conn
			pd.once.Do(func() { c = pd.conn })
			if c == nil {
				return nil, errors.New("egress: checked connection already used")
			}
			return c, nil
		},
		DisableKeepAlives:      true,
		DisableCompression:     true, // pass the client's Accept-Encoding and bytes through untouched
		ResponseHeaderTimeout:  p.cfg.DialTimeout,
		MaxResponseHeaderBytes: int64(p.cfg.MaxHeaderBytes) * 4,
	}
	return &httputil.ReverseProxy{
		Rewrite:   func(*httputil.ProxyRequest) {}, // the absolute URL is already the target
		Transport: tr,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if e, ok := r.Context().Value(entryKey{}).(*Entry); ok {
				e.Reason = "upstream: " + err.Error()
				e.Status = http.StatusBadGateway
			}
			http.Error(w, "egress proxy: upstream: "+err.Error(), http.StatusBadGateway)
		},
		ModifyResponse: func(resp *http.Response) error {
			if e, ok := resp.Request.Context().Value(entryKey{}).(*Entry); ok {
				e.Status = resp.StatusCode
			}
			return nil
		},
	}
}

type entryKey struct{}

// serveForward handles an absolute-form plain-HTTP request (GET
// http://host/path): the same policy as CONNECT, then ReverseProxy.
func (p *Proxy) serveForward(w http.ResponseWriter, r *http.Request, e *Entry) {
	if !r.URL.IsAbs() || r.URL.Host == "" {
		e.Host = r.Host
		deny(w, e, http.StatusBadRequest,
			"this is an egress proxy: send absolute-form requests (set HTTP_PROXY) or CONNECT (set HTTPS_PROXY)")
		return
	}
	e.Host = r.URL.Host
	if r.URL.Scheme != "http" {
		deny(w, e, http.StatusBadRequest, "only http:// is forwarded; use CONNECT for "+r.URL.Scheme)
		return
	}
	t, err := parseTarget(r.URL.Host, 80)
	if err != nil {
		deny(w, e, http.StatusBadRequest, err.Error())
		return
	}
	c, err := p.open(r.Context(), t, e)
	if err != nil {
		deny(w, e, statusFor(e, err), err.Error())
		return
	}
	cc := &countingConn{Conn: c}
	if !p.track(cc) {
		return
	}
	defer p.untrack(cc)
	ctx := context.WithValue(r.Context(), forwardKey{}, &preDialed{conn: cc})
	ctx = context.WithValue(ctx, entryKey{}, e)
	p.fwd.ServeHTTP(w, r.WithContext(ctx))
	e.Up, e.Down = cc.up.Load(), cc.down.Load()
}

// countingConn counts the bytes written to and read from an upstream conn.
type countingConn struct {
	net.Conn
	up, down atomic.Int64
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.down.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.up.Add(int64(n))
	return n, err
}
