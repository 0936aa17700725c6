package egress

import (
	"context"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// bannerServer is a loopback TCP service standing in for something the
// run must not reach (the runner's own API, a metadata service). It
// counts connections and sends a secret to each.
func bannerServer(t *testing.T) (addr string, accepted *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = &atomic.Int64{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_, _ = io.WriteString(c, "internal secret")
			c.Close()
		}
	}()
	return ln.Addr().String(), accepted
}

func body(t *testing.T, r io.Reader) string {
	t.Helper()
	b, _ := io.ReadAll(io.LimitReader(r, 4096))
	return string(b)
}

// TestConnectOtherPortDenied: a listed name on a port its pattern does not
// name is refused with 403, before any lookup or dial.
func TestConnectOtherPortDenied(t *testing.T) {
	res := newResolver("registry.test", "203.0.113.10")
	dial := newDialer()
	log := newEntries()
	_, proxy := startProxy(t, Config{Allow: []string{"registry.test"}, Sink: log.sink, Resolver: res, Dialer: dial})

	resp, _, _ := rawConnect(t, proxy, "registry.test:8443", nil)
	msg := body(t, resp.Body)
	if resp.StatusCode != 403 || !strings.Contains(msg, "port 8443 is not allowed for registry.test (allowed: 443)") {
		t.Fatalf("got %d %q", resp.StatusCode, msg)
	}
	if e := log.next(t); e.Allowed || e.Port != 8443 || e.Status != 403 {
		t.Fatalf("entry = %+v", e)
	}
	if len(dial.Dialed()) != 0 || res.calls["registry.test"] != 0 {
		t.Fatalf("refused before lookup and dial: dialed %v lookups %v", dial.Dialed(), res.calls)
	}
}

// TestRebindingDefence: an allowed name that resolves to 127.0.0.1 is
// refused and the loopback service never sees a connection; with the
// defence switched off the same request reads the service's secret,
// which is the attack the defence stops.
func TestRebindingDefence(t *testing.T) {
	secret, accepted := bannerServer(t)
	_, port, _ := net.SplitHostPort(secret)
	allow := []string{"rebind.test:" + port}
	res := func() *fakeResolver { return newResolver("rebind.test", "127.0.0.1") }

	t.Run("on", func(t *testing.T) {
		log := newEntries()
		_, proxy := startProxy(t, Config{Allow: allow, Sink: log.sink, Resolver: res()})
		resp, _, _ := rawConnect(t, proxy, "rebind.test:"+port, nil)
		msg := body(t, resp.Body)
		if resp.StatusCode != 403 || !strings.Contains(msg, "rebind.test resolves to 127.0.0.1, a loopback address") {
			t.Fatalf("got %d %q", resp.StatusCode, msg)
		}
		if e := log.next(t); e.Allowed || e.Addr != "" || !strings.Contains(e.Reason, "loopback") {
			t.Fatalf("entry = %+v", e)
		}
		if n := accepted.Load(); n != 0 {
			t.Fatalf("internal service saw %d connections", n)
		}
	})
	t.Run("off shows the attack", func(t *testing.T) {
		cfg := Config{Allow: allow, Resolver: res()}
		cfg.allowInternal = true
		_, proxy := startProxy(t, cfg)
		resp, _, br := rawConnect(t, proxy, "rebind.test:"+port, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("defence off: got %d", resp.StatusCode)
		}
		if got := body(t, br); got != "internal secret" {
			t.Fatalf("defence off should reach the loopback service; read %q", got)
		}
	})
	t.Run("literal IP pattern grants it", func(t *testing.T) {
		_, proxy := startProxy(t, Config{Allow: append(allow, secret), Resolver: res()})
		resp, _, br := rawConnect(t, proxy, "rebind.test:"+port, nil)
		if resp.StatusCode != 200 || body(t, br) != "internal secret" {
			t.Fatalf("a literally listed internal IP should be reachable by name; got %d", resp.StatusCode)
		}
	})
}

// flipResolver answers a public address first and 127.0.0.1 afterwards,
// as a rebinding DNS server with TTL 0 would.
type flipResolver struct{ n atomic.Int64 }

func (f *flipResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	if f.n.Add(1) == 1 {
		return []netip.Addr{netip.MustParseAddr("203.0.113.10")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// TestDialsTheCheckedAddress: the proxy resolves once and dials the
// address it checked, so a resolver that flips to 127.0.0.1 after the
// check gains nothing.
func TestDialsTheCheckedAddress(t *testing.T) {
	secret, accepted := bannerServer(t)
	res := &flipResolver{}
	dial := newDialer("203.0.113.10:443", secret)
	_, proxy := startProxy(t, Config{Allow: []string{"flip.test"}, Resolver: res, Dialer: dial})
	resp, _, br := rawConnect(t, proxy, "flip.test:443", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("got %d", resp.StatusCode)
	}
	// The tunnel is up once the kernel completes the connect, which may be before the
	// server's Accept counts it; its banner is written after the count.
	if got := body(t, br); got != "internal secret" {
		t.Fatalf("read %q through the tunnel, want the server's banner", got)
	}
	if got := dial.Dialed(); len(got) != 1 || got[0] != "203.0.113.10:443" {
		t.Fatalf("dialed %v, want only the checked 203.0.113.10:443", got)
	}
	if res.n.Load() != 1 || accepted.Load() != 1 {
		t.Fatalf("lookups %d, accepted %d: want one each", res.n.Load(), accepted.Load())
	}
}

// TestInternalTargetsDenied: the metadata service by name, a mixed answer,
// and unlisted IP literals are all refused.
func TestInternalTargetsDenied(t *testing.T) {
	res := newResolver("meta.test", "169.254.169.254",
		"mixed.test", "203.0.113.10", "mixed.test", "10.0.0.7")
	dial := newDialer()
	_, proxy := startProxy(t, Config{
		Allow: []string{"meta.test:80", "mixed.test", "*.zone.test"}, Resolver: res, Dialer: dial,
	})
	cases := map[string]string{
		"meta.test:80":                             "169.254.169.254, a link-local address",
		"mixed.test:443":                           "10.0.0.7, a private address",
		"169.254.169.254:80":                       "169.254.169.254 is not on this run's egress allowlist",
		"127.0.0.1:443":                            "127.0.0.1 is not on this run's egress allowlist",
		"[::ffff:127.0.0.1]:443":                   "127.0.0.1 is not on this run's egress allowlist",
		"[::1]:443":                                "::1 is not on this run's egress allowlist",
		"0x7f.0.0.1:443":                           "last label is numeric",
		"xn--nxasmq6b.zone.test.:443":              "no such host", // wildcard matches, lookup fails: 502
		"localhost:443":                            "localhost is not on this run's egress allowlist",
		"metadata.google.internal.:80":             "not on this run's egress allowlist",
		strings.Repeat("a", 64) + ".zone.test:443": "over-long label",
		"2130706433:443":                           "last label is numeric",
	}
	for target, want := range cases {
		resp, _, _ := rawConnect(t, proxy, target, nil)
		msg := body(t, resp.Body)
		if resp.StatusCode == 200 || !strings.Contains(msg, want) {
			t.Errorf("CONNECT %s: got %d %q, want refusal containing %q", target, resp.StatusCode, msg, want)
		}
	}
	if got := dial.Dialed(); len(got) != 0 {
		t.Fatalf("nothing should have been dialed: %v", got)
	}
}

// TestBytesCounted: a tunnel's Up and Down equal exactly the payload each
// side sent, including bytes the client sent in the same packet as its
// CONNECT header.
func TestBytesCounted(t *testing.T) {
	const up, down = 300_001, 123_457
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write(make([]byte, down))
		n, _ := io.Copy(io.Discard, c)
		got <- n
	}()
	log := newEntries()
	_, proxy := startProxy(t, Config{Allow: []string{"data.test"}, Sink: log.sink,
		Resolver: newResolver("data.test", "203.0.113.40"),
		Dialer:   newDialer("203.0.113.40:443", ln.Addr().String())})

	early := []byte("early bytes behind the header")
	resp, c, br := rawConnect(t, proxy, "data.test:443", early)
	if resp.StatusCode != 200 {
		t.Fatalf("got %d", resp.StatusCode)
	}
	if _, err := c.Write(make([]byte, up-len(early))); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).CloseWrite()
	n, _ := io.Copy(io.Discard, br)
	if n != down || <-got != up {
		t.Fatalf("transfer itself wrong: down %d", n)
	}
	e := log.next(t)
	if e.Up != up || e.Down != down {
		t.Fatalf("entry counted up %d down %d, sent %d and %d", e.Up, e.Down, up, down)
	}
}

// TestSlowClientDropped: a client trickling its header is dropped once the
// header timeout passes and still gets an entry; with the bound lifted
// (a timeout of an hour) the same client is still held, which is the
// resource the bound protects.
func TestSlowClientDropped(t *testing.T) {
	trickle := func(t *testing.T, timeout time.Duration, watch time.Duration) (dropped bool, after time.Duration) {
		log := newEntries()
		_, proxy := startProxy(t, Config{HeaderTimeout: timeout, Sink: log.sink})
		c, err := net.Dial("tcp", proxy)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // one header byte every 50ms, never finishing
			defer wg.Done()
			for _, b := range []byte("CONNECT registry.test:443 HTTP/1.1\r\nX-Slow: " + strings.Repeat("z", 1000)) {
				select {
				case <-done:
					return
				case <-time.After(50 * time.Millisecond):
				}
				if _, err := c.Write([]byte{b}); err != nil {
					return
				}
			}
		}()
		defer func() { close(done); wg.Wait() }()
		_ = c.SetReadDeadline(time.Now().Add(watch))
		_, err = c.Read(make([]byte, 1))
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return false, time.Since(start)
		}
		e := log.next(t)
		if e.Method != "" || e.Allowed || !strings.Contains(e.Reason, "before a complete request") {
			t.Fatalf("entry = %+v", e)
		}
		return true, time.Since(start)
	}
	t.Run("bounded", func(t *testing.T) {
		dropped, after := trickle(t, 300*time.Millisecond, 5*time.Second)
		if !dropped || after < 250*time.Millisecond {
			t.Fatalf("dropped=%v after %v; want dropped after about 300ms", dropped, after)
		}
	})
	t.Run("unbounded holds it", func(t *testing.T) {
		if dropped, _ := trickle(t, time.Hour, time.Second); dropped {
			t.Fatal("without the bound the slow client should still be connected")
		}
	})
}

// TestOversizedHeaderRefused: a header beyond MaxHeaderBytes gets 431.
func TestOversizedHeaderRefused(t *testing.T) {
	_, proxy := startProxy(t, Config{MaxHeaderBytes: 1024})
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		_, _ = io.WriteString(c, "CONNECT registry.test:443 HTTP/1.1\r\nX-Big: "+strings.Repeat("b", 64<<10)+"\r\n\r\n")
	}()
	b, _ := io.ReadAll(io.LimitReader(c, 200))
	if !strings.HasPrefix(string(b), "HTTP/1.1 431") {
		t.Fatalf("got %q", b)
	}
}

// TestNotAProxyRequest: origin-form and https:// absolute-form requests
// are refused with 400 and a body saying how to use the proxy.
func TestNotAProxyRequest(t *testing.T) {
	log := newEntries()
	_, proxy := startProxy(t, Config{Allow: []string{"registry.test"}, Sink: log.sink})
	for req, want := range map[string]string{
		"GET /x HTTP/1.1\r\nHost: registry.test\r\n\r\n":                     "send absolute-form requests",
		"GET https://registry.test/ HTTP/1.1\r\nHost: registry.test\r\n\r\n": "only http:// is forwarded",
	} {
		c, err := net.Dial("tcp", proxy)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(c, req)
		b, _ := io.ReadAll(c)
		c.Close()
		if !strings.HasPrefix(string(b), "HTTP/1.1 400") || !strings.Contains(string(b), want) {
			t.Errorf("%q: got %q", req, b)
		}
		if e := log.next(t); e.Allowed || e.Status != 400 {
			t.Errorf("entry = %+v", e)
		}
	}
}

// TestStopClosesTunnels: Stop ends an open tunnel, records it, refuses a
// second Start, and is idempotent.
func TestStopClosesTunnels(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			_, _ = io.Copy(io.Discard, c) // holds the tunnel open
		}
	}()
	log := newEntries()
	p, proxy := startProxy(t, Config{Allow: []string{ln.Addr().String()}, Sink: log.sink})
	resp, c, _ := rawConnect(t, proxy, ln.Addr().String(), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("got %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("tunnel should be closed by Stop; read err %v", err)
	}
	if e := log.next(t); !e.Allowed || e.Status != 200 {
		t.Fatalf("entry = %+v", e)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := p.Start(ctx, ln); err == nil {
		t.Fatal("Start after Stop should fail")
	}
}

// TestSummaryCapped: entries beyond MaxEntries are counted, not kept.
func TestSummaryCapped(t *testing.T) {
	p, proxy := startProxy(t, Config{MaxEntries: 2})
	for i := 0; i < 5; i++ {
		resp, _, _ := rawConnect(t, proxy, "host"+strconv.Itoa(i)+".test:443", nil)
		resp.Body.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for p.Summary().Attempts < 5 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	s := p.Summary()
	if s.Attempts != 5 || s.Denied != 5 || len(s.Entries) != 2 || s.Dropped != 3 {
		t.Fatalf("summary = %+v", s)
	}
}

// TestMaxConns: with MaxConns 1, a second client is not served while a
// tunnel is open, and is served once it closes; with room for two (the
// bound lifted) it is served at once.
func TestMaxConns(t *testing.T) {
	target, _ := bannerServer(t)
	try := func(t *testing.T, max int) (served bool, second net.Conn, first net.Conn) {
		_, proxy := startProxy(t, Config{Allow: []string{target}, MaxConns: max})
		resp, first, _ := rawConnect(t, proxy, target, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("first: %d", resp.StatusCode)
		}
		second, err := net.Dial("tcp", proxy) // accepted by the kernel, maybe not by the proxy
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { second.Close() })
		_, _ = io.WriteString(second, "CONNECT "+target+" HTTP/1.1\r\nHost: x\r\n\r\n")
		_ = second.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		n, _ := second.Read(make([]byte, 1))
		return n > 0, second, first
	}
	t.Run("bounded", func(t *testing.T) {
		served, second, first := try(t, 1)
		if served {
			t.Fatal("second client answered while the first held the only slot")
		}
		first.Close()
		_ = second.SetReadDeadline(time.Now().Add(5 * time.Second))
		b := make([]byte, 12)
		if _, err := io.ReadFull(second, b); err != nil || string(b) != "HTTP/1.1 200" {
			t.Fatalf("second client after the first closed: %q %v", b, err)
		}
	})
	t.Run("room for two serves both", func(t *testing.T) {
		if served, _, _ := try(t, 2); !served {
			t.Fatal("with a free slot the second client should be answered at once")
		}
	})
}
