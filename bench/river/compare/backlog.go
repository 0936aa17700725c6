package compare

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/runner/sandbox"
)

// BacklogFirst is how many completions a backlog measurement times.
const BacklogFirst = 200

// BacklogSizes are the backlogs the backlog mode measures, smallest first (the
// baseline the others are compared with).
var BacklogSizes = []int{200, 1000, 10000}

// MinBacklogRatio is the acceptance bound: with the largest backlog the pool must
// keep at least this share of its throughput with the smallest.
const MinBacklogRatio = 0.9

// BacklogPoint is one backlog measurement.
type BacklogPoint struct {
	// Dialect is store.DialectPostgres or store.DialectSQLite.
	Dialect string
	// Pending is how many tasks were pending when the pool started.
	Pending int
	// Create is how long creating them through Service.CreateTask took (before the
	// clock).
	Create time.Duration
	// Rate is the tasks per second from the pool's Start to the BacklogFirst-th
	// finished attempt.
	Rate float64
}

// Backlog measures the pool (confined, as serve runs it) with pending no-op tasks
// created before the clock starts, timing the first BacklogFirst completions (all of
// them when pending is smaller). The store is a fresh database on the PostgreSQL
// server at serverURL (dropped afterwards) for store.DialectPostgres, settled (VACUUM
// ANALYZE, as autovacuum would leave it) once the tasks exist, or a fresh SQLite file
// for store.DialectSQLite.
func Backlog(ctx context.Context, dialect, serverURL string, pending, concurrency int, log *slog.Logger) (BacklogPoint, error) {
	p := BacklogPoint{Dialect: dialect, Pending: pending}
	measure := func(cfg store.Config) error {
		s, err := openSite(ctx, cfg, concurrency)
		if err != nil {
			return err
		}
		defer s.close()
		start := time.Now()
		if err := s.createTasks(ctx, pending); err != nil {
			return err
		}
		p.Create = time.Since(start)
		if err := settle(ctx, cfg.DatabaseURL); err != nil {
			return err
		}
		p.Rate, err = s.runPool(ctx, sandbox.ModeOn, min(pending, BacklogFirst), log)
		return err
	}
	var err error
	switch dialect {
	case store.DialectPostgres:
		err = withDatabase(ctx, serverURL, func(dbURL string) error { return measure(store.Config{DatabaseURL: dbURL}) })
	case store.DialectSQLite:
		err = measure(store.Config{})
	default:
		err = fmt.Errorf("unknown dialect %q", dialect)
	}
	if err != nil {
		return p, fmt.Errorf("backlog %s P=%d: %w", dialect, pending, err)
	}
	return p, nil
}

// WriteBacklog prints points as an aligned table, one row per dialect and P (in the
// order they first appear), over every repetition of it: the median creation time,
// the median tasks/s and their range, the ratio of that median to the median of the
// dialect's first P, and a verdict against MinBacklogRatio.
func WriteBacklog(w io.Writer, points []BacklogPoint) error {
	type key struct {
		dialect string
		pending int
	}
	var order []key
	groups := map[key][]BacklogPoint{}
	for _, p := range points {
		k := key{p.Dialect, p.Pending}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], p)
	}
	const format = "%-9s %6s %4s %9s %9s %13s %9s  %s"
	if _, err := fmt.Fprintf(w, format+"\n", "store", "P", "runs", "create", "tasks/s", "range", baseLabel(points), "verdict"); err != nil {
		return err
	}
	base := map[string]float64{}
	for _, k := range order {
		g := groups[k]
		rates, creates := make([]float64, len(g)), make([]float64, len(g))
		for i, p := range g {
			rates[i], creates[i] = p.Rate, float64(p.Create)
		}
		rate := median(rates)
		if _, ok := base[k.dialect]; !ok {
			base[k.dialect] = rate
		}
		r := ratio(rate, base[k.dialect])
		verdict := "ok"
		if r < MinBacklogRatio {
			verdict = fmt.Sprintf("below %.1f", MinBacklogRatio)
		}
		line := fmt.Sprintf(format, k.dialect, fmt.Sprint(k.pending), fmt.Sprint(len(g)),
			time.Duration(median(creates)).Round(10*time.Millisecond).String(), fmt.Sprintf("%.1f", rate),
			fmt.Sprintf("%.1f-%.1f", slices.Min(rates), slices.Max(rates)), fmtRatio(r), verdict)
		if _, err := io.WriteString(w, strings.TrimRight(line, " ")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// median returns the median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// baseLabel names the column of ratios to each dialect's first P.
func baseLabel(points []BacklogPoint) string {
	if len(points) == 0 {
		return "ratio"
	}
	return fmt.Sprintf("vs P=%d", points[0].Pending)
}
