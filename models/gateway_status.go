package models

// GatewayStatus is what the dashboard shows of a runner's model gateway and its runs'
// network: where the gateway listens, which providers it serves, how many attempts
// hold a live credential, and how confined runs reach the network.
type GatewayStatus struct {
	// Serving is false when the runner has no gateway (--gateway=off): workers then
	// call providers themselves and report their own usage.
	Serving   bool
	Addr      string
	Providers []string
	Live      int
	// Network says how confined runs connect: "private" (a network namespace each)
	// or "ports" (Landlock's port rules alone).
	Network string
	// Egress are the hosts runs in a private network may reach.
	Egress []string
}
