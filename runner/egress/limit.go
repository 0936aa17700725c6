package egress

import (
	"net"
	"sync"
)

// limitListener admits at most cap(sem) connections at a time; Accept
// waits for a slot, which a conn frees when closed. Unlike
// x/net/netutil's it hands out the *net.TCPConn underneath (see
// limitedTCP), so tunnels keep half-close and kernel splicing.
type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	release := sync.OnceFunc(func() { <-l.sem })
	if tc, ok := c.(*net.TCPConn); ok {
		return &limitedTCP{TCPConn: tc, release: release}, nil
	}
	return &limitedConn{Conn: c, release: release}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitedTCP is a TCP conn that frees its slot on Close; CloseWrite,
// ReadFrom and WriteTo come from the embedded *net.TCPConn.
type limitedTCP struct {
	*net.TCPConn
	release func()
}

func (c *limitedTCP) Close() error {
	err := c.TCPConn.Close()
	c.release()
	return err
}

// limitedConn is any other conn (a unix socket from the sandbox, say)
// that frees its slot on Close.
type limitedConn struct {
	net.Conn
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

// CloseWrite half-closes when the underlying conn can.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

// raw returns the conn to copy through: the *net.TCPConn inside a
// limitedTCP, so io.Copy between two TCP conns can splice in the kernel.
func raw(c net.Conn) net.Conn {
	if l, ok := c.(*limitedTCP); ok {
		return l.TCPConn
	}
	return c
}
