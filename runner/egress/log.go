package egress

import (
	"sync"
	"time"
)

// DefaultMaxEntries is how many entries a proxy keeps for its Summary when
// Config.MaxEntries is zero.
const DefaultMaxEntries = 1000

// Entry records one connection attempt: a CONNECT tunnel, one forwarded
// plain-HTTP request, or a client connection that never completed a
// request. It is delivered to the Sink when the attempt ends.
type Entry struct {
	Time     time.Time     // when the request (or connection) arrived
	Client   string        // the client's address as the listener saw it
	Method   string        // CONNECT, the forwarded method, or "" if no request was read
	Host     string        // normalised target name or IP literal; raw when unparseable
	Port     int           // target port; 0 when unknown
	Addr     string        // the IP:port actually dialed; "" when nothing was dialed
	Allowed  bool          // the policy allowed this host:port and every address it resolved to
	Reason   string        // why it was denied or failed; "" for a clean allowed attempt
	Status   int           // HTTP status the client got from the proxy or upstream; 0 if none
	Up       int64         // bytes the proxy wrote upstream (tunnel payload, or the forwarded request)
	Down     int64         // bytes the proxy read from upstream (tunnel payload, or the response)
	Duration time.Duration // from arrival to the end of the tunnel or response
}

// Summary totals a proxy's attempts. Entries holds at most the first
// Config.MaxEntries entries, oldest first; Dropped counts the rest, whose
// totals are still in the counters.
type Summary struct {
	Attempts  int     // every entry, kept or dropped
	Allowed   int     // entries with Allowed
	Denied    int     // entries without Allowed
	BytesUp   int64   // sum of Up
	BytesDown int64   // sum of Down
	Entries   []Entry // kept entries, oldest first
	Dropped   int     // entries not kept because of the cap
}

// recorder keeps the bounded summary and forwards each entry to the sink.
type recorder struct {
	sink func(Entry)
	max  int

	mu  sync.Mutex
	sum Summary
}

func (r *recorder) record(e Entry) {
	r.mu.Lock()
	r.sum.Attempts++
	if e.Allowed {
		r.sum.Allowed++
	} else {
		r.sum.Denied++
	}
	r.sum.BytesUp += e.Up
	r.sum.BytesDown += e.Down
	if len(r.sum.Entries) < r.max {
		r.sum.Entries = append(r.sum.Entries, e)
	} else {
		r.sum.Dropped++
	}
	r.mu.Unlock()
	if r.sink != nil {
		r.sink(e) // outside the lock: a slow sink delays only its own connection
	}
}

func (r *recorder) summary() Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sum
	s.Entries = append([]Entry(nil), r.sum.Entries...)
	return s
}
