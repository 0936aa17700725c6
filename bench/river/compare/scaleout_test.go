package compare

import (
	"strings"
	"testing"
	"time"
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
		{at: at(0), done: 0, waiters: 3, cross: true},                      // ramp-up: outside
		{at: at(1), done: 10, backend: time.Second, self: 2 * time.Second}, // window start
		{at: at(2), done: 30, waiters: 2, cross: true, blockers: []string{"commit", "insert"}},
		{at: at(3), done: 50, waiters: 1, blockers: nil},
		{at: at(4), done: 70, blockers: []string{"commit"}},
		{at: at(5), done: 90, backend: 3 * time.Second, self: 6 * time.Second}, // window end
		{at: at(6), done: 100, waiters: 5, cross: true},                        // tail: outside
	}
	w, err := window(samples, 10, 90)
	if err != nil {
		t.Fatal(err)
	}
	if w.Done != 80 || w.Took != 4*SampleEvery || w.Samples != 4 {
		t.Errorf("done %d in %v over %d samples, want 80 in %v over 4", w.Done, w.Took, w.Samples, 4*SampleEvery)
	}
	if w.LockAny != 0.5 || w.LockCross != 0.25 || w.Waiters != 0.75 {
		t.Errorf("lock any %v cross %v waiters %v, want 0.5 0.25 0.75", w.LockAny, w.LockCross, w.Waiters)
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
