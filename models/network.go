package models

import "time"

// NetworkLog is what an attempt's processes connected to through Countersign's egress
// proxy (runner/egress): every connection allowed or denied, with its bytes. Runs in a
// private network reach nothing else; see docs/egress.md.
type NetworkLog struct {
	// Allow are the host patterns the attempt's egress allowed.
	Allow []string `json:"allow,omitempty"`
	// Entries are the connections in order, at most MaxNetworkEntries; Dropped counts
	// the rest.
	Entries []NetworkEntry `json:"entries,omitempty"`
	Dropped int            `json:"dropped,omitempty"`
	// Allowed and Denied count every connection, the dropped ones included.
	Allowed int `json:"allowed"`
	Denied  int `json:"denied"`
	// BytesUp and BytesDown sum what allowed connections sent and received.
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
}

// MaxNetworkEntries bounds the connections an attempt's log keeps.
const MaxNetworkEntries = 200

// NetworkEntry is one connection through the egress proxy.
type NetworkEntry struct {
	At      time.Time `json:"at"`
	Method  string    `json:"method,omitempty"` // CONNECT, or the plain HTTP method
	Host    string    `json:"host"`
	Port    int       `json:"port"`
	Allowed bool      `json:"allowed"`
	Reason  string    `json:"reason,omitempty"` // why it was denied
	Up      int64     `json:"up"`
	Down    int64     `json:"down"`
	MS      int64     `json:"ms"`
}
