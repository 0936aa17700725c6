package egress

import "net/netip"

// blockedPrefixes are ranges beyond the standard library's classifiers
// that lead to a host's or a cloud's internals rather than the internet.
var blockedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"; 0.x reaches local services on Linux
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT; cloud internals (100.100.100.200 metadata)
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking, used inside some providers
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, and 255.255.255.255
	netip.MustParsePrefix("::/96"),          // IPv4-compatible IPv6 (deprecated)
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64 embeds an IPv4 address that may be internal
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
	netip.MustParsePrefix("2002::/16"),      // 6to4 embeds an IPv4 address
	netip.MustParsePrefix("fec0::/10"),      // deprecated site-local
}

// internalReason names the class of an address the proxy must not reach
// by name (loopback, private, link-local such as the 169.254.169.254
// metadata service, unspecified, multicast, or another non-public range),
// or returns "" for a public address.
func internalReason(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid():
		return "invalid"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsMulticast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	}
	for _, p := range blockedPrefixes {
		if p.Contains(ip) {
			return "reserved (" + p.String() + ")"
		}
	}
	return ""
}
