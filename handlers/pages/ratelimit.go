package pages

import (
	"sync"
	"time"
)

// Login attempts allowed per client address and window.
const (
	loginBurst  = 10
	loginWindow = time.Minute
)

// limiter counts events per key in fixed windows, in memory. It is modest on
// purpose: it slows password guessing from one address without any shared state.
type limiter struct {
	mu     sync.Mutex
	max    int
	window time.Duration
	now    func() time.Time
	seen   map[string]*window
}

type window struct {
	start time.Time
	n     int
}

func newLimiter(max int, per time.Duration) *limiter {
	return &limiter{max: max, window: per, now: time.Now, seen: map[string]*window{}}
}

// allow records one event for key and reports whether it is within the limit.
func (l *limiter) allow(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if len(l.seen) > 10000 { // forget old windows so the map stays bounded
		for k, w := range l.seen {
			if now.Sub(w.start) >= l.window {
				delete(l.seen, k)
			}
		}
	}
	w := l.seen[key]
	if w == nil || now.Sub(w.start) >= l.window {
		w = &window{start: now}
		l.seen[key] = w
	}
	w.n++
	return w.n <= l.max
}

// forgive takes back one event of key: a successful sign-in does not count against
// the limit, only failed ones do.
func (l *limiter) forgive(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w := l.seen[key]; w != nil && w.n > 0 {
		w.n--
	}
}
