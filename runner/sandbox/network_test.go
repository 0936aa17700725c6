//go:build linux && (amd64 || arm64)

package sandbox_test

import (
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/countersign/countersign/runner/sandbox"
)

// hostNet is what a test opens on the host for a confined run to try to reach: a
// listener per way out, each counting the connections (or datagrams) it gets and
// answering "host <name>", and the port the run is served on in its namespace.
type hostNet struct {
	served  uint16 // the port served inside the run's namespace; host listeners use it on other addresses
	ports   []uint16
	hits    map[string]*atomic.Int32
	reach   []string // -reach arguments for the probe
	gaps    []string // the ways out a run without a network namespace has (Landlock lets its ports through)
	others  []string // the ways out other layers (seccomp, Landlock scopes, no capabilities) close too
	mu      sync.Mutex
	accepts int // connections accepted inside runs' namespaces
}

// openHost opens the host's listeners, closed at the end of the test.
func openHost(t *testing.T) *hostNet {
	t.Helper()
	h := &hostNet{hits: map[string]*atomic.Int32{}}
	v6, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback on the host: %v", err)
	}
	h.served = uint16(v6.Addr().(*net.TCPAddr).Port)
	h.serveStream(t, "tcp6-loopback-same-port", "tcp", v6, true)
	h.listen(t, "tcp-loopback-other-port", "tcp4", "127.0.0.1:0", true)
	v4, v6g := hostAddresses(t)
	if v4 != "" {
		h.listen(t, "tcp-host-address-same-port", "tcp4", net.JoinHostPort(v4, fmt.Sprint(h.served)), true)
		if raw, err := net.ListenPacket("ip4:icmp", "0.0.0.0"); err == nil {
			// Only where the runner itself may open raw sockets (not as root of a
			// user namespace) can a run with the sandbox off show the way out.
			raw.Close()
			h.reach = append(h.reach, "-reach", "icmp-host-address=icmp:"+v4)
		}
	}
	if v6g != "" {
		h.listen(t, "tcp6-host-address-same-port", "tcp6", net.JoinHostPort(v6g, fmt.Sprint(h.served)), true)
	}
	var lc net.ListenConfig
	lc.SetMultipathTCP(true)
	mp, err := lc.Listen(t.Context(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.serveStream(t, "mptcp-loopback", "mptcp", mp, false)
	ab, err := net.Listen("unix", fmt.Sprintf("@countersign-test-%d-%s", os.Getpid(), t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	h.serveStream(t, "abstract-unix", "unix", ab, false)
	h.serveUDP(t)
	h.reach = append(h.reach, "-reach", fmt.Sprintf("loopback-served=tcp:127.0.0.1:%d", h.served), "-interfaces", "-net-only")
	return h
}

// listen opens a TCP listener on addr and serves it as name.
func (h *hostNet) listen(t *testing.T, name, network, addr string, gap bool) {
	t.Helper()
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	ln, err := lc.Listen(t.Context(), network, addr)
	if err != nil {
		t.Fatal(err)
	}
	h.serveStream(t, name, "tcp", ln, gap)
}

// serveStream answers every connection to ln with "host <name>" and counts it.
func (h *hostNet) serveStream(t *testing.T, name, kind string, ln net.Listener, gap bool) {
	t.Cleanup(func() { ln.Close() })
	n := h.count(name, gap)
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		h.ports = append(h.ports, uint16(tcp.Port))
	}
	h.reach = append(h.reach, "-reach", fmt.Sprintf("%s=%s:%s", name, kind, ln.Addr()))
	if kind == "unix" {
		h.reach[len(h.reach)-1] = fmt.Sprintf("%s=unix:%s", name, ln.Addr().String())
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if kind != "mptcp" || isMPTCP(c) { // a fallback to plain TCP is not Multipath
				n.Add(1)
			}
			fmt.Fprintf(c, "host %s\n", name)
			c.Close()
		}
	}()
}

// serveUDP answers every datagram to a host loopback port with "host udp-loopback".
func (h *hostNet) serveUDP(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	n := h.count("udp-loopback", true)
	h.reach = append(h.reach, "-reach", "udp-loopback=udp:"+pc.LocalAddr().String())
	go func() {
		buf := make([]byte, 64)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			n.Add(1)
			pc.WriteTo([]byte("host udp-loopback\n"), from)
		}
	}()
}

func (h *hostNet) count(name string, gap bool) *atomic.Int32 {
	n := new(atomic.Int32)
	h.hits[name] = n
	if gap {
		h.gaps = append(h.gaps, name)
	} else {
		h.others = append(h.others, name)
	}
	return n
}

// network is the Network policy that serves h.served inside the run's namespace:
// every connection is answered "inside".
func (h *hostNet) network() *sandbox.NetworkPolicy {
	return &sandbox.NetworkPolicy{Ports: []uint16{h.served}, OnListen: func(port uint16, ln net.Listener) {
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				h.mu.Lock()
				h.accepts++
				h.mu.Unlock()
				fmt.Fprintf(c, "inside %d\n", port)
				c.Close()
			}
		}()
	}}
}

func (h *hostNet) reset() {
	for _, n := range h.hits {
		n.Store(0)
	}
}

// hostAddresses returns one non-loopback, non-link-local IPv4 and IPv6 address of this
// machine ("" where it has none).
func hostAddresses(t *testing.T) (v4, v6 string) {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
			continue
		}
		if ipn.IP.To4() != nil && v4 == "" {
			v4 = ipn.IP.String()
		} else if ipn.IP.To4() == nil && v6 == "" {
			v6 = ipn.IP.String()
		}
	}
	return v4, v6
}

// A run with a Network reaches the port served in its namespace and nothing of the
// host's: not another loopback port, not the served port number on the host's own
// IPv4 or IPv6 addresses or on ::1, not UDP, not Multipath TCP, not an abstract unix
// socket, not a raw ICMP echo; it sees no interface but lo. The same attacks, run
// with the network namespace alone (no Landlock, seccomp or capability drop), fail as
// well: the namespace stops each by itself. Without a Network the TCP, IPv6 and UDP
// ways out succeed under the full sandbox (Landlock's port rules name no host), and
// with the sandbox off every one succeeds, so each assertion is shown able to fail.
func TestPrivateNetwork(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the network namespace needs the runner to hold CAP_SYS_ADMIN")
	}
	sb := probeOn(t)
	if ok, why := sb.NetworkIsolation(); !ok {
		t.Fatalf("root, yet no network isolation: %s", why)
	}
	h := openHost(t)
	l := newLayout(t)
	base := l.policy(buildProbe(t), h.ports...)
	base.AllowUnix = true // else seccomp alone refuses the abstract socket
	withNet := base
	withNet.Network = h.network()
	for _, c := range []struct {
		name   string
		sb     *sandbox.Sandbox
		p      sandbox.Policy
		served bool     // the run reaches its served port
		ok     []string // the ways out that must succeed; every other must fail
	}{
		{"private network", sb, withNet, true, nil},
		{"network namespace alone", sandbox.NetworkNamespaceOnly(sb), withNet, true, nil},
		{"no network namespace", sb, base, false, h.gaps},
		{"sandbox off", sandbox.Probe(sandbox.ModeOff), base, false, append(h.gaps, h.others...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			h.reset()
			got := runProbe(t, c.sb, c.p, l, h.reach...)
			for name, hits := range h.hits {
				want := strings.Contains(" "+strings.Join(c.ok, " ")+" ", " "+name+" ")
				reached := strings.HasPrefix(got[name], "ok: host "+name)
				if want != reached || want != (hits.Load() > 0) {
					t.Errorf("%s: %q, %d reached the host; want reached=%v", name, got[name], hits.Load(), want)
				}
			}
			if v, ok := got["icmp-host-address"]; ok && (v == "ok: echo reply") != (c.name == "sandbox off") {
				t.Errorf("icmp-host-address: %q", v)
			}
			if served := got["loopback-served"] == fmt.Sprintf("ok: inside %d", h.served); served != c.served {
				t.Errorf("loopback-served: %q, want served=%v", got["loopback-served"], c.served)
			}
			if lo := got["interfaces"] == "ok: lo"; lo != c.served {
				t.Errorf("interfaces: %q, want only lo=%v", got["interfaces"], c.served)
			}
		})
	}
}

// isMPTCP reports whether an accepted connection uses Multipath TCP.
func isMPTCP(c net.Conn) bool {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return false
	}
	on, err := tc.MultipathTCP()
	return err == nil && on
}
