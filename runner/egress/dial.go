package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
)

// refusal is a policy denial (answered 403); any other error from open is
// a failure to reach an allowed host (answered 502).
type refusal struct{ reason string }

func (r *refusal) Error() string { return r.reason }

// open applies the whole policy to t and returns a connection to an
// address it checked: the allowlist first, then, for a name, every
// resolved address must be public unless that IP:port is listed literally.
// It dials the checked IP, never the name again, so a second DNS answer
// cannot swap in 127.0.0.1 or 169.254.169.254 after the check.
func (p *Proxy) open(ctx context.Context, t target, e *Entry) (net.Conn, error) {
	e.Host, e.Port = t.host(), t.port
	if err := p.allow.allows(t); err != nil {
		return nil, &refusal{err.Error()}
	}
	e.Allowed = true
	ctx, cancel := context.WithTimeout(ctx, p.cfg.DialTimeout)
	defer cancel()
	ips := []netip.Addr{t.ip} // an IP literal was listed literally: no lookup, no class check
	if !t.ip.IsValid() {
		var err error
		if ips, err = p.checkedAddrs(ctx, t); err != nil {
			return nil, err
		}
	}
	var last error
	for _, ip := range ips {
		addr := net.JoinHostPort(ip.String(), strconv.Itoa(t.port))
		c, err := p.cfg.Dialer.DialContext(ctx, "tcp", addr)
		if err == nil {
			e.Addr = addr
			return c, nil
		}
		last = err
	}
	return nil, fmt.Errorf("dial %s: %w", t.host(), last)
}

// checkedAddrs resolves t's name and refuses the lot if any address is
// internal: a name that answers with both a public and an internal address
// is itself suspect, and trying the public one first would not stop a
// client retrying until it got the other.
func (p *Proxy) checkedAddrs(ctx context.Context, t target) ([]netip.Addr, error) {
	ips, err := p.cfg.Resolver.LookupNetIP(ctx, "ip", t.name)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", t.name, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("resolve %s: no addresses", t.name)
	}
	for i, ip := range ips {
		ip = ip.Unmap().WithZone("")
		ips[i] = ip
		why := internalReason(ip)
		if why == "" || p.allow.listsIP(ip, t.port) || p.cfg.allowInternal {
			continue
		}
		return nil, &refusal{fmt.Sprintf(
			"%s resolves to %s, a %s address; an internal address is reachable only when listed literally",
			t.name, ip, why)}
	}
	return ips, nil
}

// statusFor maps an error from open to the proxy's answer: 403 for a
// refusal (clearing e.Allowed when the refusal came after the allowlist,
// as for a name resolving to an internal address), 502 for a failure.
func statusFor(e *Entry, err error) int {
	var r *refusal
	if errors.As(err, &r) {
		e.Allowed = false
		return http.StatusForbidden
	}
	return http.StatusBadGateway
}
