package compare

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestParseProcStat: the CPU times are counted from the last ')', so a command name
// holding spaces and parentheses does not shift them.
func TestParseProcStat(t *testing.T) {
	line := "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 7 3 20 5 20 0 1 0 12345 0 0"
	got, err := parseProcStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if want := (procCPU{Self: 100 * time.Millisecond, Children: 250 * time.Millisecond}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, err := parseProcStat("4242 (x) S 1 2"); err == nil {
		t.Error("a short line parsed")
	}
}

// TestWindow: the window runs from the first sample at the lower mark to the first at
// the upper one; its lock shares count the samples after its start, up to its end.
func TestWindow(t *testing.T) {
	t0 := time.Now()
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * SampleEvery) }
	samples := []sample{
		{at: at(0), done: 0, waiters: 3, cross: true},                                               // ramp-up: outside
		{at: at(1), done: 10, waiters: 4, cross: true, backend: time.Second, self: 2 * time.Second}, // window start: before it
		{at: at(2), done: 30, waiters: 2, cross: true, blockers: []string{"commit", "insert"}},
		{at: at(3), done: 50, waiters: 1, blockers: nil},
		{at: at(4), done: 70, blockers: []string{"commit"}},
		{at: at(5), done: 90, waiters: 1, backend: 3 * time.Second, self: 6 * time.Second}, // window end: in it
		{at: at(6), done: 100, waiters: 5, cross: true},                                    // tail: outside
	}
	w, err := window(samples, 10, 90)
	if err != nil {
		t.Fatal(err)
	}
	if w.Done != 80 || w.Took != 4*SampleEvery || w.Samples != 4 {
		t.Errorf("done %d in %v over %d samples, want 80 in %v over 4", w.Done, w.Took, w.Samples, 4*SampleEvery)
	}
	if w.LockAny != 0.75 || w.LockCross != 0.25 || w.Waiters != 1 {
		t.Errorf("lock any %v cross %v waiters %v, want 0.75 0.25 1", w.LockAny, w.LockCross, w.Waiters)
	}
	if w.Backend != 2*time.Second || w.Self != 4*time.Second {
		t.Errorf("cpu backend %v self %v, want 2s 4s", w.Backend, w.Self)
	}
	if len(w.Blockers) != 2 || !strings.HasPrefix(w.Blockers[0], "2× commit") {
		t.Errorf("blockers %q, want commit (2) first", w.Blockers)
	}
	if _, err := window(samples, 10, 200); err == nil {
		t.Error("a window past the last sample measured")
	}
}

// TestScaleOutAcceptance: the verdicts compare the row with the most processes to the
// targets, and to the single-process row for the scale ratio.
func TestScaleOutAcceptance(t *testing.T) {
	row := func(system string, procs int, done int, lockCross float64, cpu time.Duration) ScalePoint {
		return ScalePoint{System: system, Procs: procs, Slots: 8 * procs,
			windowStats: windowStats{Done: done, Took: 10 * time.Second, LockCross: lockCross, Self: cpu * time.Duration(done)}}
	}
	points := []ScalePoint{
		row(SystemCountersign, 1, 150, 0, 3*time.Millisecond), // 15/s of 16
		row(SystemCountersign, 4, 560, 0.05, 4*time.Millisecond),
		row(SystemRiver, 1, 155, 0, 2*time.Millisecond),
		row(SystemRiver, 4, 600, 0, 3*time.Millisecond),
	}
	got := acceptance(points)
	for _, want := range []string{"0.88    want >= 0.85   ok", "3.73x   want >= 3.4x   ok",
		"5.0%    want < 10.0%     ok", "4.00 ms against River's 3.00 ms: 1.33x   want <= 2.0x   ok"} {
		if !strings.Contains(got, want) {
			t.Errorf("acceptance lacks %q:\n%s", want, got)
		}
	}
	points[1].LockCross = 0.2
	if got := acceptance(points); !strings.Contains(got, "20.0%    want < 10.0%     NOT MET") {
		t.Errorf("20 %% cross-process waits met the target:\n%s", got)
	}
}

// TestSamplerSeesLockWaits: on a live PostgreSQL, a backend of one measured process
// waiting for a row another process's backend locked is a cross-process wait with the
// blocker's statement; the same wait within one process is a wait, not a cross one.
func TestSamplerSeesLockWaits(t *testing.T) {
	server := testServer(t)
	for _, tc := range []struct {
		name         string
		waiter       string
		wantCross    bool
		wantBlockers int
	}{
		{"two processes", "cs-bench-cs-1", true, 1},
		{"one process", "cs-bench-cs-0", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := withDatabase(ctx, server, func(dbURL string) error {
				sm, err := waitedSample(ctx, t, dbURL, tc.waiter)
				if err != nil {
					return err
				}
				if sm.waiters != 1 || sm.cross != tc.wantCross || len(sm.blockers) != tc.wantBlockers {
					t.Errorf("waiters %d, cross %v, blockers %q; want 1, %v, %d", sm.waiters, sm.cross, sm.blockers, tc.wantCross, tc.wantBlockers)
				}
				if tc.wantBlockers > 0 && !strings.Contains(sm.blockers[0], "FOR UPDATE") {
					t.Errorf("blocker statement %q, want the SELECT … FOR UPDATE", sm.blockers[0])
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// waitedSample locks a row from a connection named cs-bench-cs-0, has a connection
// named waiter wait for it, and returns the first sample that sees a waiter.
func waitedSample(ctx context.Context, t *testing.T, dbURL, waiter string) (sample, error) {
	holder, err := pgx.Connect(ctx, withAppName(dbURL, "cs-bench-cs-0"))
	if err != nil {
		return sample{}, err
	}
	defer holder.Close(context.Background())
	if _, err := holder.Exec(ctx, "CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)"); err != nil {
		return sample{}, err
	}
	tx, err := holder.Begin(ctx)
	if err != nil {
		return sample{}, err
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "SELECT id FROM t WHERE id = 1 FOR UPDATE"); err != nil {
		return sample{}, err
	}
	w, err := pgx.Connect(ctx, withAppName(dbURL, waiter))
	if err != nil {
		return sample{}, err
	}
	defer w.Close(context.Background())
	waited := make(chan error, 1)
	go func() { _, err := w.Exec(ctx, "UPDATE t SET id = 1 WHERE id = 1"); waited <- err }()
	s, err := newSampler(ctx, dbURL, "SELECT 0", "cs-bench-cs-", nil)
	if err != nil {
		return sample{}, err
	}
	defer s.close()
	for range 100 {
		sm, err := s.tick(ctx)
		if err != nil || sm.waiters > 0 {
			tx.Rollback(ctx)
			return sm, errors.Join(err, <-waited)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the sampler never saw the waiter")
	return sample{}, nil
}
