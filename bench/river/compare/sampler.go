package compare

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// SampleEvery is how often the scale-out measurement samples the locks, the CPU of
// the measured processes and their backends, and the finished count.
const SampleEvery = 100 * time.Millisecond

// lockWaitsSQL lists, for the sampler's database, every backend waiting for a lock
// (a pg_locks row not granted: a row lock shows as a wait on the holder's
// transactionid or on the tuple, an advisory lock as advisory) with each backend that
// blocks it (pg_blocking_pids) and the blocker's current or last statement.
const lockWaitsSQL = `
SELECT w.pid, w.application_name, b.application_name, left(regexp_replace(b.query, '\s+', ' ', 'g'), 100)
FROM (SELECT DISTINCT pid FROM pg_locks WHERE NOT granted) l
JOIN pg_stat_activity w ON w.pid = l.pid AND w.datname = current_database()
CROSS JOIN LATERAL unnest(pg_blocking_pids(l.pid)) AS bp(pid)
JOIN pg_stat_activity b ON b.pid = bp.pid`

// backendsSQL lists the backends on the sampler's database whose application_name
// starts with $1: those of the measured processes, and not the sampler's own.
const backendsSQL = `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE $1 || '%'`

// sample is what one tick saw.
type sample struct {
	at time.Time
	// done is the finished tasks (or jobs) so far.
	done int
	// waiters is how many measured backends waited for a lock.
	waiters int
	// cross is whether one of them waited for a backend of another measured process.
	cross bool
	// blockers are the statements of the backends another process waited for.
	blockers []string
	// backend, self and children are cumulative CPU: every measured backend seen so
	// far (the last value read from each), and the measured processes and their
	// waited-for children.
	backend, self, children time.Duration
}

// sampler samples one database and the processes measured on it.
type sampler struct {
	conn *pgx.Conn
	// doneSQL counts the finished tasks or jobs.
	doneSQL string
	// prefix starts the application_name of every measured process's connections;
	// the rest of it names the process.
	prefix   string
	pids     []int
	backends map[int]time.Duration
	procs    map[int]procCPU
	samples  []sample
}

// newSampler connects to dbURL as application cs-bench-sampler.
func newSampler(ctx context.Context, dbURL, doneSQL, prefix string, pids []int) (*sampler, error) {
	conn, err := pgx.Connect(ctx, withAppName(dbURL, "cs-bench-sampler"))
	if err != nil {
		return nil, fmt.Errorf("sampler: %w", err)
	}
	return &sampler{conn: conn, doneSQL: doneSQL, prefix: prefix, pids: pids,
		backends: map[int]time.Duration{}, procs: map[int]procCPU{}}, nil
}

func (s *sampler) close() { s.conn.Close(context.Background()) }

// run samples every SampleEvery until want are done, and fails when ctx ends or
// nothing finishes for stallTimeout.
func (s *sampler) run(ctx context.Context, want int) error {
	tick := time.NewTicker(SampleEvery)
	defer tick.Stop()
	lastDone, lastMove := -1, time.Now()
	for {
		sm, err := s.tick(ctx)
		if err != nil {
			return err
		}
		s.samples = append(s.samples, sm)
		if sm.done >= want {
			return nil
		}
		if sm.done != lastDone {
			lastDone, lastMove = sm.done, sm.at
		} else if time.Since(lastMove) > stallTimeout {
			return fmt.Errorf("stalled at %d of %d for %s", sm.done, want, stallTimeout)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d done: %w", sm.done, want, ctx.Err())
		case <-tick.C:
		}
	}
}

// tick takes one sample.
func (s *sampler) tick(ctx context.Context) (sample, error) {
	sm := sample{at: time.Now()}
	if err := s.conn.QueryRow(ctx, s.doneSQL).Scan(&sm.done); err != nil {
		return sm, fmt.Errorf("sampler: count finished: %w", err)
	}
	if err := s.locks(ctx, &sm); err != nil {
		return sm, err
	}
	rows, err := s.conn.Query(ctx, backendsSQL, s.prefix)
	if err != nil {
		return sm, fmt.Errorf("sampler: backends: %w", err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return sm, fmt.Errorf("sampler: backends: %w", err)
	}
	for _, pid := range pids {
		// A backend gone since the query keeps its last value.
		if c, err := readProcCPU(int(pid)); err == nil {
			s.backends[int(pid)] = c.Self
		}
	}
	for _, pid := range s.pids {
		if c, err := readProcCPU(pid); err == nil {
			s.procs[pid] = c
		}
	}
	for _, c := range s.backends {
		sm.backend += c
	}
	for _, c := range s.procs {
		sm.self += c.Self
		sm.children += c.Children
	}
	return sm, nil
}

// locks fills in the lock waits of sm: waiters among the measured backends, and
// whether one waits for a backend of another measured process.
func (s *sampler) locks(ctx context.Context, sm *sample) error {
	rows, err := s.conn.Query(ctx, lockWaitsSQL)
	if err != nil {
		return fmt.Errorf("sampler: locks: %w", err)
	}
	defer rows.Close()
	waiters := map[int32]bool{}
	for rows.Next() {
		var pid int32
		var waiter, blocker, query string
		if err := rows.Scan(&pid, &waiter, &blocker, &query); err != nil {
			return fmt.Errorf("sampler: locks: %w", err)
		}
		if !s.measured(waiter) {
			continue
		}
		waiters[pid] = true
		if s.measured(blocker) && blocker != waiter {
			sm.cross = true
			sm.blockers = append(sm.blockers, query)
		}
	}
	sm.waiters = len(waiters)
	return rows.Err()
}

func (s *sampler) measured(app string) bool {
	return len(app) > len(s.prefix) && app[:len(s.prefix)] == s.prefix
}

// windowStats is what the samples between two completion marks say.
type windowStats struct {
	// Done and Took are the tasks finished in the window and its length.
	Done int
	Took time.Duration
	// Samples is how many samples the window holds.
	Samples int
	// LockAny and LockCross are the shares of samples with a measured backend
	// waiting for a lock, and waiting for one another process holds.
	LockAny, LockCross float64
	// Waiters is the mean number of waiting backends per sample.
	Waiters float64
	// Backend, Self and Children are the CPU spent in the window.
	Backend, Self, Children time.Duration
	// Blockers are the statements other processes waited for most, most first (at
	// most three, with their counts).
	Blockers []string
}

// window measures between the first sample with at least from done and the first
// with at least to done: the ramp-up (process start, first claims) and the tail
// (the last tasks, when slots sit idle for want of work) stay out of it.
func window(samples []sample, from, to int) (windowStats, error) {
	i := slices.IndexFunc(samples, func(s sample) bool { return s.done >= from })
	j := slices.IndexFunc(samples, func(s sample) bool { return s.done >= to })
	if i < 0 || j <= i {
		return windowStats{}, fmt.Errorf("no window from %d to %d done in %d samples", from, to, len(samples))
	}
	a, b := samples[i], samples[j]
	w := windowStats{Done: b.done - a.done, Took: b.at.Sub(a.at), Samples: j - i,
		Backend: b.backend - a.backend, Self: b.self - a.self, Children: b.children - a.children}
	counts := map[string]int{}
	var any, cross, waiters int
	for _, s := range samples[i+1 : j+1] {
		waiters += s.waiters
		if s.waiters > 0 {
			any++
		}
		if s.cross {
			cross++
		}
		for _, q := range s.blockers {
			counts[q]++
		}
	}
	n := float64(w.Samples)
	w.LockAny, w.LockCross, w.Waiters = float64(any)/n, float64(cross)/n, float64(waiters)/n
	w.Blockers = topBlockers(counts, 3)
	return w, nil
}

// topBlockers returns the k statements with the highest counts, each with its count.
func topBlockers(counts map[string]int, k int) []string {
	qs := make([]string, 0, len(counts))
	for q := range counts {
		qs = append(qs, q)
	}
	slices.SortFunc(qs, func(x, y string) int { return cmp.Or(counts[y]-counts[x], cmp.Compare(x, y)) })
	out := make([]string, 0, k)
	for _, q := range qs[:min(k, len(qs))] {
		out = append(out, fmt.Sprintf("%d× %s", counts[q], q))
	}
	return out
}

// withAppName returns dbURL with application_name set to name, so that
// pg_stat_activity tells which process each backend serves.
func withAppName(dbURL, name string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return dbURL
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}
