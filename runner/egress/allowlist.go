package egress

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// DefaultPort is the port a pattern without one allows: egress is HTTPS.
const DefaultPort = 443

// Allowlist is a parsed, immutable list of host patterns a run may reach.
// The zero value and nil allow nothing. It is safe for concurrent use.
type Allowlist struct {
	rules []rule
}

// rule is one parsed pattern. Exactly one of name (possibly wildcard) or
// ip is set.
type rule struct {
	name     string     // normalised ASCII name, without the "*." of a wildcard
	wildcard bool       // matches names strictly below name, never name itself
	ip       netip.Addr // valid for an IP literal pattern
	port     int
}

func (r rule) String() string {
	switch {
	case r.ip.IsValid():
		return net.JoinHostPort(r.ip.String(), strconv.Itoa(r.port))
	case r.wildcard:
		return "*." + r.name + ":" + strconv.Itoa(r.port)
	}
	return r.name + ":" + strconv.Itoa(r.port)
}

// ParseAllowlist parses patterns of the form host[:port]: an exact name
// ("registry.npmjs.org:443"), a leading wildcard ("*.github.com", which
// matches api.github.com and a.b.github.com but not github.com), or an IP
// literal ("127.0.0.1:8080", "[::1]:8080"). The port defaults to 443.
// Names are compared case-insensitively after IDNA (UTS #46 lookup)
// mapping and dropping one trailing dot, so "Bücher.example." and
// "xn--bcher-kva.example" are the same pattern. Any other form (a scheme,
// a path, a wildcard elsewhere than the first label) is an error that
// names the offending pattern.
func ParseAllowlist(patterns []string) (*Allowlist, error) {
	a := &Allowlist{}
	for _, p := range patterns {
		r, err := parsePattern(p)
		if err != nil {
			return nil, fmt.Errorf("egress: allowlist pattern %q: %w", p, err)
		}
		a.rules = append(a.rules, r)
	}
	return a, nil
}

// Patterns returns the normalised patterns, each with its port, in the
// order given; what a run's record shows as its allowlist.
func (a *Allowlist) Patterns() []string {
	if a == nil {
		return nil
	}
	out := make([]string, len(a.rules))
	for i, r := range a.rules {
		out[i] = r.String()
	}
	return out
}

func parsePattern(p string) (rule, error) {
	p = strings.TrimSpace(p)
	if p == "" {
		return rule{}, fmt.Errorf("empty")
	}
	if strings.ContainsAny(p, "/@?#") {
		return rule{}, fmt.Errorf("want host[:port], not a URL")
	}
	host, port, err := splitHostPort(p, DefaultPort)
	if err != nil {
		return rule{}, err
	}
	if ip, ok := parseIP(host); ok {
		return rule{ip: ip, port: port}, nil
	}
	wildcard := strings.HasPrefix(host, "*.")
	if wildcard {
		host = host[2:]
	}
	if strings.Contains(host, "*") {
		return rule{}, fmt.Errorf("a wildcard may only be a leading \"*.\"")
	}
	name, err := normaliseName(host)
	if err != nil {
		return rule{}, err
	}
	if wildcard && !strings.Contains(name, ".") {
		// "*.com" would hand out a whole top-level domain.
		return rule{}, fmt.Errorf("wildcard over a single label %q is too broad", name)
	}
	return rule{name: name, wildcard: wildcard, port: port}, nil
}

// splitHostPort splits "host", "host:port", "[v6]:port", "[v6]" or a bare
// IPv6 literal, applying def when there is no port.
func splitHostPort(s string, def int) (string, int, error) {
	switch {
	case strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"):
		return s[1 : len(s)-1], def, nil
	case strings.Count(s, ":") > 1 && !strings.HasPrefix(s, "["):
		return s, def, nil // bare IPv6 literal
	case !strings.Contains(s, ":"):
		return s, def, nil
	}
	host, ps, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("port %q is not in 1-65535", ps)
	}
	return host, port, nil
}

// parseIP accepts only canonical IP literals without a zone; IPv4-mapped
// IPv6 addresses are unmapped so ::ffff:127.0.0.1 is 127.0.0.1.
func parseIP(host string) (netip.Addr, bool) {
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" {
		return netip.Addr{}, false
	}
	return ip.Unmap(), true
}

// normaliseName lower-cases, IDNA-maps and checks a DNS name, dropping one
// trailing dot. The result is what patterns and requests are compared as.
func normaliseName(host string) (string, error) {
	host = strings.TrimSuffix(host, ".")
	if host == "" {
		return "", fmt.Errorf("empty host")
	}
	ascii, err := idna.Lookup.ToASCII(host)
	if err != nil {
		return "", fmt.Errorf("host %q is not a valid name: %v", host, err)
	}
	ascii = strings.ToLower(ascii)
	if len(ascii) > 253 {
		return "", fmt.Errorf("host name longer than 253 bytes")
	}
	labels := strings.Split(ascii, ".")
	for _, label := range labels {
		if label == "" || len(label) > 63 {
			return "", fmt.Errorf("host %q has an empty or over-long label", host)
		}
	}
	if numericLabel(labels[len(labels)-1]) {
		// "0x7f.1" or "2130706433": inet_aton would read these as IPv4.
		return "", fmt.Errorf("host %q is not a valid name: its last label is numeric (an IP address in another notation?)", host)
	}
	return ascii, nil
}

// numericLabel reports a label of only decimal digits, or 0x and hex digits.
func numericLabel(l string) bool {
	if rest, ok := strings.CutPrefix(l, "0x"); ok {
		l = rest
		return strings.Trim(l, "0123456789abcdef") == ""
	}
	return strings.Trim(l, "0123456789") == ""
}

// target is a normalised destination: a name or an IP literal, and a port.
type target struct {
	name string     // normalised name; empty for an IP literal
	ip   netip.Addr // valid for an IP literal
	port int
}

func (t target) host() string {
	if t.ip.IsValid() {
		return t.ip.String()
	}
	return t.name
}

// parseTarget normalises a request's authority ("host:port", "[v6]:port",
// or a bare host, which takes def).
func parseTarget(authority string, def int) (target, error) {
	host, port, err := splitHostPort(authority, def)
	if err != nil {
		return target{}, fmt.Errorf("bad target %q: %v", authority, err)
	}
	if ip, ok := parseIP(host); ok {
		return target{ip: ip, port: port}, nil
	}
	name, err := normaliseName(host)
	if err != nil {
		return target{}, err
	}
	return target{name: name, port: port}, nil
}

// Allows reports whether host (a name or IP literal, any case, IDNA or
// Unicode, trailing dot or not) and port are on the list. The error says
// why not: not listed at all, or listed for other ports. A name allowed
// here may still be refused by the proxy if it resolves to an internal
// address.
func (a *Allowlist) Allows(host string, port int) error {
	t, err := parseTarget(net.JoinHostPort(host, strconv.Itoa(port)), port)
	if err != nil {
		return err
	}
	return a.allows(t)
}

func (a *Allowlist) allows(t target) error {
	var ports []string
	for _, r := range a.rulesOrNil() {
		if !r.matchesHost(t) {
			continue
		}
		if r.port == t.port {
			return nil
		}
		ports = append(ports, strconv.Itoa(r.port))
	}
	if len(ports) > 0 {
		return fmt.Errorf("port %d is not allowed for %s (allowed: %s)",
			t.port, t.host(), strings.Join(ports, ", "))
	}
	return fmt.Errorf("%s is not on this run's egress allowlist", t.host())
}

func (r rule) matchesHost(t target) bool {
	if t.ip.IsValid() || r.ip.IsValid() {
		// IP literals match only IP literal patterns, exactly.
		return r.ip.IsValid() && t.ip == r.ip
	}
	if r.wildcard {
		return strings.HasSuffix(t.name, "."+r.name)
	}
	return t.name == r.name
}

// listsIP reports whether ip:port is on the list as a literal pattern; the
// only way an internal address may be dialed.
func (a *Allowlist) listsIP(ip netip.Addr, port int) bool {
	ip = ip.Unmap()
	for _, r := range a.rulesOrNil() {
		if r.ip.IsValid() && r.ip == ip && r.port == port {
			return true
		}
	}
	return false
}

func (a *Allowlist) rulesOrNil() []rule {
	if a == nil {
		return nil
	}
	return a.rules
}
