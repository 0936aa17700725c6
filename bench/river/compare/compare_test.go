package compare

import (
	"context"
	"os"
	"testing"
	"time"
)

// minRiverRatio is the least share of River's throughput Countersign's pool (confined,
// as serve runs it) must reach on the same worker, concurrency and server.
const minRiverRatio = 0.8

// TestThroughputAgainstRiver runs bare, River and Countersign once each on 400
// no-op tasks at concurrency 16 and fails when Countersign is below minRiverRatio of
// River. Without PostgreSQL it skips, or fails under CI=true.
func TestThroughputAgainstRiver(t *testing.T) {
	server := DefaultServer
	if u := os.Getenv("COUNTERSIGN_TEST_POSTGRES"); u != "" {
		server = u
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := Reachable(ctx, server); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is not reachable (set COUNTERSIGN_TEST_POSTGRES): %v", err)
		}
		t.Skipf("PostgreSQL is not reachable (set COUNTERSIGN_TEST_POSTGRES; with CI=true this fails): %v", err)
	}
	r, err := Run(ctx, Options{N: 400, Concurrency: 16, Server: server})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("N=%d, concurrency %d: bare %.1f runs/s, River %.1f jobs/s, Countersign %.1f tasks/s (sandbox on)",
		r.N, r.Concurrency, r.Bare, r.River, r.Countersign)
	t.Logf("Countersign/River %.3f (want >= %.1f), Countersign/bare %.3f", r.RiverRatio(), minRiverRatio, r.BareRatio())
	if r.RiverRatio() < minRiverRatio {
		t.Errorf("Countersign runs %.1f tasks/s, %.3f of River's %.1f jobs/s: below %.1f", r.Countersign, r.RiverRatio(), r.River, minRiverRatio)
	}
}
