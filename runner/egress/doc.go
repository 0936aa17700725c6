// Package egress is a run's only way out to the internet: an allowlisting
// HTTP proxy the runner serves on one of the loopback ports a confined
// worker, verify command or reviewer can reach from its private network
// namespace. Egress is the judge's to give: everything not on the run's
// allowlist is refused, and every attempt is recorded.
//
// The proxy speaks the two forms standard clients use when HTTPS_PROXY,
// HTTP_PROXY or ALL_PROXY points at it (curl, git, npm, pip, Go's
// net/http): CONNECT host:port, after which it tunnels bytes both ways,
// and absolute-form plain HTTP (GET http://host/path), which it forwards
// with net/http/httputil's ReverseProxy.
//
// Policy, in order, for every attempt:
//
//   - The target must match an allowlist pattern (see ParseAllowlist):
//     an exact name, a leading "*." wildcard, or an IP literal, each with
//     one port (443 when none is given). Names compare after lower-casing,
//     IDNA mapping and dropping a trailing dot. An IP literal target
//     matches only the same literal pattern. A listed name on another
//     port is refused.
//   - A name is resolved once; if any address is loopback, private,
//     link-local (169.254.169.254, the cloud metadata service),
//     unspecified, multicast or otherwise reserved, the attempt is refused
//     unless that exact IP:port is itself listed literally. This defeats
//     DNS rebinding: an allowed name cannot be pointed at the runner's own
//     loopback services or the metadata service.
//   - The proxy dials the address it checked, never the name again.
//
// Denials are answered 403 with a body saying what was refused and why;
// failures to reach an allowed host 502. Request headers are bounded in
// size (Config.MaxHeaderBytes) and in time from accept
// (Config.HeaderTimeout), so a slow or oversized client is dropped; at
// most Config.MaxConns clients are served at once.
//
// Every attempt yields one Entry (time, client, host, port, the address
// dialed, allowed, reason, status, bytes up and down, duration), handed
// to Config.Sink when the tunnel or response ends; a connection that
// never completes a request yields one too. Proxy.Summary totals them,
// keeping at most Config.MaxEntries entries and counting the rest.
//
// Use:
//
//	p, err := egress.New(egress.Config{
//		Allow: []string{"registry.npmjs.org", "*.github.com", "proxy.golang.org:443"},
//		Sink:  func(e egress.Entry) { attempt.LogEgress(e) },
//	})
//	if err != nil { ... }            // a bad pattern, named
//	err = p.Start(ctx, ln)           // ln: the run's listener, inside its namespace
//	...                              // run with HTTPS_PROXY=http://127.0.0.1:<port>
//	err = p.Stop(ctx)                // closes open tunnels too
//	sum := p.Summary()
//
// See docs/egress.md for the model and the measured cost of a tunnel.
package egress
