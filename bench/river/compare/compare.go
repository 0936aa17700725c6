package compare

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/countersign/countersign/runner/sandbox"
)

// DefaultConcurrency is the concurrency every system gets unless told otherwise.
const DefaultConcurrency = 16

// Options says what Run measures.
type Options struct {
	// N is the number of runs, jobs or tasks each system completes.
	N int
	// Concurrency is the bare loop's goroutines, River's MaxWorkers and the
	// Countersign worker agent's concurrency (DefaultConcurrency when zero).
	Concurrency int
	// Server is the PostgreSQL server's URL, on whose postgres database the
	// per-system databases are created (DefaultServer when empty).
	Server string
	// SandboxOff also measures Countersign with the sandbox off (River and bare do
	// not confine their workers).
	SandboxOff bool
	// RiverDefaults also measures River with its default fetch timing.
	RiverDefaults bool
	// Floor also measures the product's worker.Run confined, with no database or
	// runner around it: the ceiling confinement alone sets.
	Floor bool
	// Log receives River's and the pool's logs (nil: none).
	Log *slog.Logger
}

// Result holds the throughputs Run measured, per second; a figure that was not
// measured is zero.
type Result struct {
	N, Concurrency int
	// Bare is the bare fork/exec loop's runs per second.
	Bare float64
	// Confined is worker.Run's confined runs per second, no database (see Confined).
	Confined float64
	// River is River's jobs per second with the RiverBench tuning.
	River float64
	// RiverDefaults is River's jobs per second with its default fetch timing.
	RiverDefaults float64
	// Countersign is the pool's tasks per second, confined as serve runs it.
	Countersign float64
	// CountersignOff is the pool's tasks per second with the sandbox off.
	CountersignOff float64
}

// RiverRatio is Countersign (confined) over River (tuned); 0 when either is missing.
func (r Result) RiverRatio() float64 { return ratio(r.Countersign, r.River) }

// BareRatio is Countersign (confined) over the bare loop; 0 when either is missing.
func (r Result) BareRatio() float64 { return ratio(r.Countersign, r.Bare) }

func ratio(a, b float64) float64 {
	if a == 0 || b == 0 {
		return 0
	}
	return a / b
}

// Run measures, one after the other in this process, the bare loop, River and
// Countersign (confined, then the optional variants) on N each, every database-backed
// system on a fresh database of its own. It stops at the first failed measurement.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Server == "" {
		o.Server = DefaultServer
	}
	if o.N <= 0 {
		return Result{}, fmt.Errorf("compare: N must be positive, not %d", o.N)
	}
	r := Result{N: o.N, Concurrency: o.Concurrency}
	steps := []struct {
		name string
		on   bool
		dst  *float64
		fn   func() (float64, error)
	}{
		{"bare", true, &r.Bare, func() (float64, error) { return Bare(ctx, o.N, o.Concurrency) }},
		{"confined", o.Floor, &r.Confined, func() (float64, error) { return Confined(ctx, o.N, o.Concurrency) }},
		{"river", true, &r.River, func() (float64, error) { return River(ctx, o.Server, o.N, o.Concurrency, RiverBench, o.Log) }},
		{"river (defaults)", o.RiverDefaults, &r.RiverDefaults, func() (float64, error) {
			return River(ctx, o.Server, o.N, o.Concurrency, RiverTuning{}, o.Log)
		}},
		{"countersign", true, &r.Countersign, func() (float64, error) {
			return Countersign(ctx, o.Server, o.N, o.Concurrency, sandbox.ModeOn, o.Log)
		}},
		{"countersign (sandbox off)", o.SandboxOff, &r.CountersignOff, func() (float64, error) {
			return Countersign(ctx, o.Server, o.N, o.Concurrency, sandbox.ModeOff, o.Log)
		}},
	}
	for _, s := range steps {
		if !s.on {
			continue
		}
		v, err := s.fn()
		if err != nil {
			return r, fmt.Errorf("%s: %w", s.name, err)
		}
		*s.dst = v
	}
	return r, nil
}

// WriteTable prints r as an aligned table: system, per second, ratio to River (tuned)
// and ratio to bare, one row per measured figure.
func (r Result) WriteTable(w io.Writer) error {
	rows := []struct {
		name string
		v    float64
	}{
		{"bare fork/exec", r.Bare},
		{"worker.Run confined, no database", r.Confined},
		{"River (riverbench fetch timing)", r.River},
		{"River (default fetch timing)", r.RiverDefaults},
		{"Countersign (sandbox on, as serve)", r.Countersign},
		{"Countersign (sandbox off)", r.CountersignOff},
	}
	const format = "%-36s %9s %9s %9s\n"
	if _, err := fmt.Fprintf(w, format, "system", "tasks/s", "vs River", "vs bare"); err != nil {
		return err
	}
	for _, row := range rows {
		if row.v == 0 {
			continue
		}
		if _, err := fmt.Fprintf(w, format, row.name, fmt.Sprintf("%.1f", row.v), fmtRatio(ratio(row.v, r.River)), fmtRatio(ratio(row.v, r.Bare))); err != nil {
			return err
		}
	}
	return nil
}

func fmtRatio(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", x)
}
