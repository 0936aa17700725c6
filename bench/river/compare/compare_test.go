package compare

import (
	"context"
	"os"
	"testing"
	"time"
)

// currentFloorRiverRatio is the floor this test asserts, not issue #34's target: the
// share of River's throughput the pool (confined, as serve runs it) reaches on main
// today on the same worker, concurrency and server (0.276–0.333 in two runs on the
// shared 2-core machine, 28 Nov 2026, after settles and slots went to constant
// statements per batch; 0.148–0.254 before), about half of it for the noise of one
// short run on a busy machine. A fall below it is a regression of the claim path.
// Raise it as issue #34's claim path lands, up to targetRiverRatio.
const currentFloorRiverRatio = 0.15

// Issue #34's acceptance for `make bench-compare`, logged beside the measured ratios
// (the full-size run, not this CI-sized one, is the one the issue judges).
const (
	// targetRiverRatio is the pool's least throughput over River's.
	targetRiverRatio = 1.0
	// targetBareRatio is the pool's least throughput over the bare fork/exec loop's.
	targetBareRatio = 0.85
)

// TestThroughputAgainstRiver runs bare, River and Countersign once each on 400
// no-op tasks at concurrency 16 (about 10 s, CI-sized) and fails when Countersign is
// below currentFloorRiverRatio of River; it logs issue #34's targets beside the
// measured ratios. Without PostgreSQL it skips, or fails under CI=true.
func TestThroughputAgainstRiver(t *testing.T) {
	server := testServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := Run(ctx, Options{N: 400, Concurrency: 16, Server: server})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("N=%d, concurrency %d: bare %.1f runs/s, River %.1f jobs/s, Countersign %.1f tasks/s (sandbox on)",
		r.N, r.Concurrency, r.Bare, r.River, r.Countersign)
	t.Logf("Countersign/River %.3f (floor asserted %.2f; issue #34's target >= %.2f: %s)",
		r.RiverRatio(), currentFloorRiverRatio, targetRiverRatio, metOrNot(r.RiverRatio() >= targetRiverRatio))
	t.Logf("Countersign/bare %.3f (issue #34's target >= %.2f: %s)", r.BareRatio(), targetBareRatio, metOrNot(r.BareRatio() >= targetBareRatio))
	if r.RiverRatio() < currentFloorRiverRatio {
		t.Errorf("Countersign runs %.1f tasks/s, %.3f of River's %.1f jobs/s: below today's floor %.2f",
			r.Countersign, r.RiverRatio(), r.River, currentFloorRiverRatio)
	}
}

func metOrNot(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}

// testServer returns the PostgreSQL server the tests use (COUNTERSIGN_TEST_POSTGRES,
// else DefaultServer); when it is not reachable the test skips, or fails under
// CI=true.
func testServer(t *testing.T) string {
	t.Helper()
	server := DefaultServer
	if u := os.Getenv("COUNTERSIGN_TEST_POSTGRES"); u != "" {
		server = u
	}
	if err := Reachable(context.Background(), server); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is not reachable (set COUNTERSIGN_TEST_POSTGRES): %v", err)
		}
		t.Skipf("PostgreSQL is not reachable (set COUNTERSIGN_TEST_POSTGRES; with CI=true this fails): %v", err)
	}
	return server
}
