package egress

import (
	"net/netip"
	"strings"
	"testing"
)

// TestAllowlistMatching: exact, wildcard, port, case, trailing-dot, IDNA
// and IP-literal rules, each with a case that must be refused.
func TestAllowlistMatching(t *testing.T) {
	a, err := ParseAllowlist([]string{
		"registry.npmjs.org:443", "*.github.com", "Bücher.example.", "127.0.0.1:8080", "[::1]:9000", "plain.test:80",
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		host string
		port int
		ok   bool
	}{
		{"registry.npmjs.org", 443, true},
		{"REGISTRY.NPMJS.ORG.", 443, true},
		{"registry.npmjs.org", 80, false},
		{"evil-registry.npmjs.org", 443, false},
		{"api.github.com", 443, true},
		{"a.b.github.com", 443, true},
		{"github.com", 443, false}, // the wildcard is strictly below
		{"evilgithub.com", 443, false},
		{"github.com.evil.test", 443, false},
		{"api.github.com", 22, false},
		{"xn--bcher-kva.example", 443, true},
		{"BÜCHER.example", 443, true},
		{"bucher.example", 443, false},
		{"127.0.0.1", 8080, true},
		{"::ffff:127.0.0.1", 8080, true},
		{"127.0.0.1", 8081, false},
		{"127.0.0.2", 8080, false},
		{"::1", 9000, true},
		{"plain.test", 80, true},
		{"plain.test", 443, false},
	}
	for _, c := range cases {
		err := a.Allows(c.host, c.port)
		if (err == nil) != c.ok {
			t.Errorf("Allows(%q, %d) = %v, want allowed=%v", c.host, c.port, err, c.ok)
		}
	}
	want := "registry.npmjs.org:443 *.github.com:443 xn--bcher-kva.example:443 127.0.0.1:8080 [::1]:9000 plain.test:80"
	if got := strings.Join(a.Patterns(), " "); got != want {
		t.Errorf("Patterns() = %q, want %q", got, want)
	}
}

// TestAllowlistRejectsBadPatterns: forms outside the grammar are errors
// naming the pattern, never silently broad.
func TestAllowlistRejectsBadPatterns(t *testing.T) {
	for _, p := range []string{
		"", "https://github.com", "github.com/path", "user@github.com", "*github.com", "a.*.com",
		"*.com", "*", "*.", "github.com:0", "github.com:65536", "github.com:https", "exa mple.com",
		"a..b", "2130706433", "[fe80::1%eth0]:443",
	} {
		if _, err := ParseAllowlist([]string{p}); err == nil {
			t.Errorf("pattern %q accepted", p)
		} else if !strings.Contains(err.Error(), "egress: allowlist pattern") {
			t.Errorf("pattern %q: error %q does not name the pattern", p, err)
		}
	}
	var none *Allowlist
	if none.Allows("github.com", 443) == nil {
		t.Error("a nil allowlist must allow nothing")
	}
}

// TestInternalReason: the classes the proxy refuses to reach by name.
func TestInternalReason(t *testing.T) {
	for s, want := range map[string]string{
		"127.0.0.1": "loopback", "::1": "loopback", "::ffff:127.0.0.1": "loopback",
		"10.1.2.3": "private", "172.16.0.1": "private", "192.168.1.1": "private", "fd00::1": "private",
		"169.254.169.254": "link-local", "fe80::1": "link-local",
		"0.0.0.0": "unspecified", "::": "unspecified", "224.0.0.1": "multicast",
		"100.100.100.200": "reserved", "0.1.2.3": "reserved", "64:ff9b::7f00:1": "reserved",
		"::7f00:1": "reserved", "255.255.255.255": "reserved",
		"203.0.113.10": "", "140.82.112.3": "", "2606:4700::1111": "",
	} {
		got := internalReason(netip.MustParseAddr(s))
		if !strings.HasPrefix(got, want) || (want == "" && got != "") {
			t.Errorf("internalReason(%s) = %q, want %q", s, got, want)
		}
	}
}
