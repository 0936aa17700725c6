package task

// UsageCompare sets the usage the gateway metered beside what the worker reported,
// for an attempt whose usage was metered or carries a report beside it.
type UsageCompare struct {
	// Metered: the gateway counted Charged; otherwise Charged is the worker's report.
	Metered bool
	Charged UsageFigures
	// Reported is the worker's own report; nil when it reported nothing.
	Reported *UsageFigures
	// Mismatch says how the report differs from the meter beyond tolerance: the
	// attempt is flagged.
	Mismatch string
}

// UsageFigures are one side of a comparison in words: "1,200", "$0.0123"; "—" when
// unknown.
type UsageFigures struct {
	Tokens, Cost string
}

// chargedLabel heads the charged column.
func (u UsageCompare) chargedLabel() string {
	if u.Metered {
		return "Metered (gateway)"
	}
	return "Charged"
}

// Network is the egress proxy's log of an attempt's connections.
type Network struct {
	// Allow are the host patterns the attempt's egress allowed.
	Allow           []string
	Allowed, Denied int
	// BytesUp and BytesDown are what allowed connections sent and received ("1.2 KiB").
	BytesUp, BytesDown string
	Entries            []NetworkEntry
	// Dropped counts connections beyond those kept.
	Dropped int
}

// NetworkEntry is one connection, in words.
type NetworkEntry struct {
	Method  string
	Target  string // host:port
	Allowed bool
	Reason  string // why it was denied
	Up      string
	Down    string
	Time    string // how long it lasted
}

// verdictLabel is "allowed" or "denied".
func (e NetworkEntry) verdictLabel() string {
	if e.Allowed {
		return "allowed"
	}
	return "denied"
}

// verdictClass colours the verdict like a passed or failed check.
func (e NetworkEntry) verdictClass() string {
	if e.Allowed {
		return "badge state-pass"
	}
	return "badge state-fail"
}
