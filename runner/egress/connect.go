package egress

import (
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// serveConnect checks the CONNECT target, dials the checked address,
// answers 200 and splices bytes both ways until both sides have finished.
// Up and Down count the tunnel payload exactly: what the client sent
// after its CONNECT header, and what the upstream sent back.
func (p *Proxy) serveConnect(w http.ResponseWriter, r *http.Request, e *Entry) {
	e.Host = r.Host
	t, err := parseTarget(r.Host, DefaultPort)
	if err != nil {
		deny(w, e, http.StatusBadRequest, err.Error())
		return
	}
	up, err := p.open(r.Context(), t, e)
	if err != nil {
		deny(w, e, statusFor(e, err), err.Error())
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = up.Close()
		deny(w, e, http.StatusInternalServerError, "connection cannot be hijacked")
		return
	}
	client, brw, err := hj.Hijack()
	if err != nil {
		_ = up.Close()
		e.Reason = "hijack: " + err.Error()
		return
	}
	if !p.track(client, up) {
		return // stopped meanwhile; track closed both
	}
	defer p.untrack(client, up)
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		e.Reason = "write 200: " + err.Error()
		return
	}
	e.Status = http.StatusOK
	_ = client.SetDeadline(time.Time{}) // the header deadline must not cut the tunnel
	// brw.Reader may already hold bytes the client sent right behind its
	// CONNECT (a TLS ClientHello): send them first, then copy from the raw
	// conn so the kernel can splice.
	var early int64
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			e.Reason = "write upstream: " + err.Error()
			return
		}
		early = int64(n)
	}
	e.Up, e.Down = splice(client, up)
	e.Up += early
}

// splice copies client->up and up->client concurrently, half-closing each
// destination when its source ends, and returns the bytes each way.
func splice(client, up net.Conn) (upN, downN int64) {
	rc := raw(client)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		upN, _ = io.Copy(up, rc)
		closeWrite(up)
	}()
	downN, _ = io.Copy(rc, up)
	closeWrite(client)
	wg.Wait()
	return upN, downN
}

// closeWrite half-closes c when it can, so the peer sees EOF while the
// other direction still flows; otherwise it closes c.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

// track registers a tunnel's two conns so Stop can close them. It returns
// false, having closed both, if the proxy has already stopped.
func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.tunnels[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		delete(p.tunnels, c)
		_ = c.Close()
	}
}
