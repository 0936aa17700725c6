package sandbox

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
)

// NetworkPolicy asks that a run get a network namespace of its own, in which only the
// loopback interface is up and nothing listens but the listeners the sandbox makes for
// Ports: the run then reaches those ports on 127.0.0.1 and nothing else — no other
// port, no other host, no UDP or DNS out, no IPv6 out, no abstract unix socket of the
// host, no raw or packet socket that could see a real interface.
type NetworkPolicy struct {
	// Ports are the loopback TCP ports the run may connect to. For each the sandbox
	// listens on 127.0.0.1:<port> inside the run's namespace (a port below 1024 is
	// fine: it binds before dropping capabilities) and hands the listener to OnListen.
	// Landlock's connect rules grant exactly these ports (Policy.ConnectTCP is then
	// ignored: there is no other host to reach). Empty: a run with no network at all.
	Ports []uint16
	// OnListen is given each port's listener once the command has started, on the
	// goroutine that called Start, before Start returns; it must not block (start a
	// goroutine that accepts and serves or forwards). A listener's socket stays in the
	// run's namespace whichever thread accepts from it. The sandbox closes every
	// listener once the run's whileRunning has returned (Accept then fails with
	// net.ErrClosed); connections already accepted are the caller's to close.
	// Required when Ports is not empty.
	OnListen func(port uint16, ln net.Listener)
}

// ErrNoNetworkIsolation is returned by Start for a policy with a Network when this
// sandbox cannot give runs a network namespace; NetworkIsolation says why. The runner
// then either refuses the run or runs it without Network, in the weaker mode where
// Landlock's port rules allow Policy.ConnectTCP on any host, and says so.
var ErrNoNetworkIsolation = errors.New("sandbox: no private network for runs")

// normalize sorts and dedupes the ports of a copy of n.
func (n *NetworkPolicy) normalize() *NetworkPolicy {
	if n == nil {
		return nil
	}
	c := *n
	c.Ports = slices.Clone(n.Ports)
	slices.Sort(c.Ports)
	c.Ports = slices.Compact(c.Ports)
	return &c
}

// validate rejects port 0 and ports with nowhere to hand their listeners.
func (n *NetworkPolicy) validate() error {
	if n == nil {
		return nil
	}
	if slices.Contains(n.Ports, 0) {
		return errors.New("sandbox: network port 0 names no port")
	}
	if len(n.Ports) > 0 && n.OnListen == nil {
		return errors.New("sandbox: network ports need an OnListen to serve them")
	}
	return nil
}

// describe says in plain words what the run may reach over the network.
func (n *NetworkPolicy) describe() string {
	if len(n.Ports) == 0 {
		return "no network: a private network namespace with only loopback up and nothing listening"
	}
	ports := make([]string, len(n.Ports))
	for i, port := range n.Ports {
		ports[i] = fmt.Sprint(port)
	}
	return "connect only to 127.0.0.1 ports " + strings.Join(ports, ", ") +
		" (served by Countersign) in a private network namespace: no other host or port, no UDP, DNS or IPv6 out"
}

// NetworkIsolation reports whether runs whose Policy has a Network get a network
// namespace of their own, and in one line what they get or why not, for /readyz and
// the start-up log. It needs the runner to hold CAP_SYS_ADMIN (in its own user
// namespace: a container's root counts) and a kernel that grants the namespace; the
// package doc says why a runner without it cannot make one.
func (s *Sandbox) NetworkIsolation() (ok bool, why string) {
	switch {
	case s.mode == ModeOff:
		return false, "sandbox off: runs reach every host and port the runner reaches (--sandbox=off)"
	case s.reason != "":
		return false, "sandbox unavailable: " + s.reason
	case s.netns:
		return true, "a private network namespace per run: loopback only, reaching just the ports Countersign serves in it"
	case s.nonetns != "":
		return false, s.nonetns
	}
	return false, noNetnsWithoutCapSysAdmin
}

// noNetnsWithoutCapSysAdmin is why a runner without CAP_SYS_ADMIN gives runs no network
// namespace (measured by TestNetworkWithoutCapSysAdmin).
const noNetnsWithoutCapSysAdmin = "no private network per run: the runner holds no CAP_SYS_ADMIN, so it cannot make a network namespace " +
	"with loopback listeners in it (unshare(CLONE_NEWNET) and setns are refused, and a run cloned into a user and network namespace " +
	"of its own has loopback down and no capability to raise it); Landlock's port rules still allow the granted ports on any host. " +
	"Give the runner CAP_SYS_ADMIN, or start it as root of a user namespace of its own (unshare --user --map-root-user)"
