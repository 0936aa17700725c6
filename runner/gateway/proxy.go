package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
)

// newProxy builds the reverse proxy. SSE responses are flushed per write (the
// ReverseProxy does so for text/event-stream and bodies of unknown length), and a
// pooled copy buffer keeps the memory of many open streams down.
func (gw *Gateway) newProxy() *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite:        gw.rewrite,
		Transport:      gw.cfg.Transport,
		ModifyResponse: gw.meterResponse,
		ErrorHandler:   gw.proxyError,
		BufferPool:     &bufferPool{},
		// A client hanging up mid-stream is routine here, not an error to print.
		ErrorLog: slog.NewLogLogger(gw.cfg.Log.Handler(), slog.LevelDebug),
	}
}

// rewrite points the request at its provider and swaps the worker's credential for
// the real key. Accept-Encoding identity keeps the body readable by the meter (a
// gzip stream would also hold bytes back). X-Forwarded headers are not set, so the
// provider learns nothing of the sandbox.
func (gw *Gateway) rewrite(pr *httputil.ProxyRequest) {
	c := callOf(pr.In.Context())
	up := gw.upstreamOf(c.route.provider)
	path := pr.In.URL.Path
	if c.route.provider == OpenAI {
		path = strings.TrimPrefix(path, "/v1")
	}
	pr.Out.URL.Scheme, pr.Out.URL.Host = up.base.Scheme, up.base.Host
	pr.Out.URL.Path, pr.Out.URL.RawPath = up.base.Path+path, ""
	// The worker's credential may ride in the query (Gemini's ?key=): it goes, the
	// rest (alt=sse) stays.
	pr.Out.URL.RawQuery = withoutKey(pr.In.URL)
	pr.Out.Host = up.base.Host
	h := pr.Out.Header
	h.Del("x-api-key")
	h.Del("Authorization")
	h.Del("x-goog-api-key")
	h.Set("Accept-Encoding", "identity")
	switch c.route.provider {
	case OpenAI:
		h.Set("Authorization", "Bearer "+up.key)
	case Gemini:
		h.Set("x-goog-api-key", up.key)
	default:
		h.Set("x-api-key", up.key)
	}
}

// accountHeaders name the provider account; the worker has no need of them.
var accountHeaders = []string{"anthropic-organization-id", "openai-organization", "openai-project"}

// meterResponse wraps a metered call's response body in its meter. An error
// status is settled at once as unbilled.
func (gw *Gateway) meterResponse(res *http.Response) error {
	for _, h := range accountHeaders {
		res.Header.Del(h)
	}
	c := callOf(res.Request.Context())
	if c == nil || !c.route.kind.metered() {
		return nil
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		c.settle(Tokens{}, false, false)
		return nil
	}
	ct := res.Header.Get("Content-Type")
	res.Body = &meterBody{
		rc:     res.Body,
		meter:  usageMeter{kind: c.route.kind},
		stream: strings.HasPrefix(ct, "text/event-stream"),
		done:   func(t Tokens, final bool) { c.settle(t, final, true) },
	}
	return nil
}

// proxyError answers a call that got no response. One that never reached the
// provider (no connection) costs nothing; any other (the client left while the
// provider worked, the credential was revoked, the connection broke) is charged its
// reservation, since the provider may bill what it began: otherwise a worker could
// hang up on every dear call before its answer and spend unmetered.
func (gw *Gateway) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	c := callOf(r.Context())
	if refusal := c.refusal(); refusal != nil {
		// The gateway refused the call while its body still arrived: the upstream
		// never had the whole request, so it costs nothing.
		c.settle(Tokens{}, false, false)
		switch {
		case errors.Is(refusal, context.Canceled): // the worker hung up
		case errors.Is(refusal, errRevoked):
			writeRefusal(w, c.route.provider, refuseAuth, deadCredential(c.route.provider))
		default:
			gw.refuse(w, c.lease, c.route.provider, refusal)
		}
		return
	}
	if c != nil {
		var op *net.OpError
		neverSent := errors.As(err, &op) && op.Op == "dial"
		c.settle(Tokens{}, false, !neverSent)
	}
	if errors.Is(err, context.Canceled) {
		return // the client left, or the credential was revoked: no one to answer
	}
	gw.cfg.Log.Warn("gateway: upstream unreachable", "err", err)
	p := Anthropic
	if c != nil {
		p = c.route.provider
	}
	writeRefusal(w, p, refuseUpstream, "the Countersign gateway could not reach the model provider")
}

// bufferPool lends the proxy its copy buffers.
type bufferPool struct{ p sync.Pool }

// copyBufferSize is each copy buffer's size: an SSE event is far smaller, and a
// stream holds one buffer while it is open (16 KB cost 11 KB more heap a stream in
// BenchmarkOpenStreams, for no throughput in BenchmarkStreamThroughput).
const copyBufferSize = 4 << 10

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, copyBufferSize)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }
