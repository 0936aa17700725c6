package runner

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/egress"
	"github.com/countersign/countersign/runner/sandbox"
)

// EgressPort is the egress proxy's port inside a run's private network: the only way
// out to other hosts, for the hosts Config.EgressAllow names. Runs get it as
// HTTPS_PROXY, HTTP_PROXY and ALL_PROXY.
const EgressPort = 3128

// privateNetwork reports whether the attempt's confined runs get a private network:
// Config.PrivateNetwork, with the sandbox on and able to make one (decided once, in
// New).
func (p *confiner) privateNetwork() bool { return p.private }

// canMakePrivateNetwork is privateNetwork's decision, from the config.
func canMakePrivateNetwork(cfg Config) bool {
	if !cfg.PrivateNetwork || cfg.Sandbox == nil || !cfg.Sandbox.Enabled() || !cfg.Sandbox.Ready() {
		return false
	}
	ok, _ := cfg.Sandbox.NetworkIsolation()
	return ok
}

// runNetwork is the private network of one of ar's confined runs, when runs get one:
// loopback only, where the run finds Countersign's API at its port, the model gateway
// at its port, the egress proxy at EgressPort and agent a's own ports (forwarded to
// the same ports on the runner's loopback, the admin's grant); nothing else, on any
// host. Nil keeps the Landlock port rules alone.
func (p *confiner) runNetwork(ar *attemptRun, a *models.Agent) *sandbox.NetworkPolicy {
	if !p.privateNetwork() {
		return nil
	}
	forward := map[uint16]string{}
	if u, err := url.Parse(p.cfg.APIURL); err == nil && u.Host != "" {
		if port := urlPort(p.cfg.APIURL); port != 0 {
			forward[port] = net.JoinHostPort(u.Hostname(), strconv.Itoa(int(port)))
		}
	}
	for _, port := range toPorts(a.Sandbox.Connect) {
		forward[port] = net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
	}
	gwPort := p.gatewayPort()
	ports := []uint16{EgressPort}
	for port := range forward {
		ports = append(ports, port)
	}
	if gwPort != 0 {
		ports = append(ports, gwPort)
	}
	slices.Sort(ports)
	ports = slices.Compact(ports)
	return &sandbox.NetworkPolicy{Ports: ports, OnListen: func(port uint16, ln net.Listener) {
		switch {
		case port == gwPort:
			if err := p.cfg.GatewayService.Serve(quietListener{ln}); err != nil {
				_ = ln.Close()
			}
		case port == EgressPort:
			ar.net.serve(p, ln, p.ownServices())
		default:
			go forwardConns(ln, forward[port])
		}
	}}
}

// networkEnv is what a run in a private network is told about its way out: the
// egress proxy, with Countersign's own addresses reached directly.
func networkEnv() []string {
	proxy := "http://127.0.0.1:" + strconv.Itoa(EgressPort)
	var env []string
	for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy"} {
		env = append(env, k+"="+proxy)
	}
	return append(env, "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost")
}

// forwardConns copies each connection accepted on ln to and from addr, until ln is
// closed (the run ended).
func forwardConns(ln net.Listener, addr string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := (&net.Dialer{Timeout: 10 * time.Second}).Dial("tcp", addr)
			if err != nil {
				return
			}
			defer up.Close()
			done := make(chan struct{})
			go func() {
				_, _ = io.Copy(up, c)
				if tc, ok := up.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
				close(done)
			}()
			_, _ = io.Copy(c, up)
			_ = c.Close()
			<-done
		}()
	}
}

// quietListener reports its closing as a server that was shut down: a run's
// listener is closed by the sandbox when the run ends, which is no serving error.
type quietListener struct{ net.Listener }

func (l quietListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if errors.Is(err, net.ErrClosed) {
		return nil, http.ErrServerClosed
	}
	return c, err
}

// attemptNet is an attempt's egress: one proxy per run that asked for one, all
// logging into the attempt's network log.
type attemptNet struct {
	mu      sync.Mutex
	proxies []*egress.Proxy
	log     *models.NetworkLog
}

// ownServices are Countersign's own services on the runner's loopback (the gateway,
// the API), as egress patterns: a client that sends every connection to its proxy,
// NO_PROXY or not (Qwen Code does), still reaches them through the egress proxy.
func (p *confiner) ownServices() []string {
	var out []string
	if port := p.gatewayPort(); port != 0 {
		out = append(out, net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
	}
	if u, err := url.Parse(p.cfg.APIURL); err == nil && u.Hostname() == "127.0.0.1" {
		if port := urlPort(p.cfg.APIURL); port != 0 {
			out = append(out, net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
		}
	}
	return out
}

// serve starts an egress proxy on ln for one run of the attempt: the hosts
// Config.EgressAllow names, and own (Countersign's services).
func (n *attemptNet) serve(p *confiner, ln net.Listener, own []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	allow := slices.Concat(p.cfg.EgressAllow, own)
	if n.log == nil {
		n.log = &models.NetworkLog{Allow: allow}
	}
	px, err := egress.New(egress.Config{Allow: allow, Sink: n.record})
	if err == nil {
		err = px.Start(context.Background(), ln)
	}
	if err != nil {
		p.log.Error("starting a run's egress proxy failed: the run has no way out", "err", err)
		_ = ln.Close()
		return
	}
	n.proxies = append(n.proxies, px)
}

// record adds one connection to the attempt's log.
func (n *attemptNet) record(e egress.Entry) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := n.log
	if e.Allowed {
		l.Allowed++
		l.BytesUp += e.Up
		l.BytesDown += e.Down
	} else {
		l.Denied++
	}
	if len(l.Entries) >= models.MaxNetworkEntries {
		l.Dropped++
		return
	}
	l.Entries = append(l.Entries, models.NetworkEntry{At: e.Time.UTC(), Method: e.Method, Host: e.Host, Port: e.Port,
		Allowed: e.Allowed, Reason: e.Reason, Up: e.Up, Down: e.Down, MS: e.Duration.Milliseconds()})
}

// close stops the attempt's proxies (their tunnels with them) and returns its log:
// nil when no run had a private network.
func (n *attemptNet) close() *models.NetworkLog {
	n.mu.Lock()
	proxies := n.proxies
	n.proxies = nil
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, px := range proxies {
		_ = px.Stop(ctx)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.log
}
