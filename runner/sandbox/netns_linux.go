//go:build linux && (amd64 || arm64)

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"

	"golang.org/x/sys/unix"
)

// portListener is a listener the sandbox made in a run's network namespace, with the
// port it was asked for.
type portListener struct {
	port uint16
	ln   net.Listener
}

func closeListeners(lns []portListener) {
	for _, l := range lns {
		l.ln.Close()
	}
}

// netNamespaceError is a failure to give a run its network namespace.
type netNamespaceError struct{ err error }

func (e *netNamespaceError) Error() string {
	return "no private network per run: the kernel refused a network namespace: unshare(CLONE_NEWNET): " + e.err.Error()
}

func (e *netNamespaceError) Unwrap() error { return e.err }

// enterPrivateNetwork moves the calling locked thread — only it: namespaces belong to
// threads, and unshare(CLONE_NEWNET) takes effect at once — into a new network
// namespace, brings its loopback up and listens on 127.0.0.1:port there for each port.
// It runs before the thread drops its capabilities: the namespace needs CAP_SYS_ADMIN,
// raising lo CAP_NET_ADMIN, a port below 1024 CAP_NET_BIND_SERVICE. The listeners'
// sockets belong to the namespace for good (a socket keeps the namespace it was made
// in, and keeps it alive), so any goroutine of the runner may accept from them; the
// command the thread forks inherits the namespace but not the listeners (close-on-exec).
func enterPrivateNetwork(ports []uint16) ([]portListener, error) {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return nil, &netNamespaceError{err}
	}
	if err := loopbackUp(); err != nil {
		return nil, fmt.Errorf("sandbox: bringing up lo in the run's network namespace: %w", err)
	}
	// Plain TCP, not the Multipath TCP Go's listeners try first: the run's seccomp
	// filter refuses MPTCP sockets, and a plain listener takes plain connections.
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	var lns []portListener
	for _, port := range ports {
		ln, err := lc.Listen(context.Background(), "tcp4", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			closeListeners(lns)
			return nil, fmt.Errorf("sandbox: listening in the run's network namespace: %w", err)
		}
		lns = append(lns, portListener{port, ln})
	}
	return lns, nil
}

// loopbackUp sets IFF_UP on lo, which a fresh network namespace has down and without
// an address: raising it gives it 127.0.0.1/8 (and ::1 where IPv6 is on).
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCGIFFLAGS: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCSIFFLAGS: %w", err)
	}
	return nil
}

// proveNetwork starts /bin/true in a private network namespace with a listener on a
// privileged port (bind succeeds only once lo is up with 127.0.0.1 on it) and waits.
func (s *Sandbox) proveNetwork() error {
	cmd := exec.Command("/bin/true")
	done := make(chan error, 1)
	p := Policy{ReadExec: systemDirs, Network: &NetworkPolicy{Ports: []uint16{1}, OnListen: func(uint16, net.Listener) {}}}
	if err := s.start(cmd, p, func() { done <- cmd.Wait() }); err != nil {
		if refused := (*netNamespaceError)(nil); errors.As(err, &refused) {
			return refused
		}
		return fmt.Errorf("no private network per run: a confined test command in a network namespace could not start: %w", err)
	}
	if err := <-done; err != nil {
		return fmt.Errorf("no private network per run: a confined /bin/true in a network namespace failed: %w", err)
	}
	return nil
}
