package compare

import (
	"context"
	"fmt"
	"io"
	"log/slog"
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

// WriteBacklog prints points as an aligned table: dialect, P, creation time, tasks/s
// and the ratio to the first point of the same dialect, with a verdict against
// MinBacklogRatio.
func WriteBacklog(w io.Writer, points []BacklogPoint) error {
	const format = "%-9s %6s %10s %9s %9s  %s"
	if _, err := fmt.Fprintf(w, format+"\n", "store", "P", "create", "tasks/s", baseLabel(points), "verdict"); err != nil {
		return err
	}
	base := map[string]float64{}
	for _, p := range points {
		if _, ok := base[p.Dialect]; !ok {
			base[p.Dialect] = p.Rate
		}
		r := ratio(p.Rate, base[p.Dialect])
		verdict := "ok"
		if r < MinBacklogRatio {
			verdict = fmt.Sprintf("below %.1f", MinBacklogRatio)
		}
		line := fmt.Sprintf(format, p.Dialect, fmt.Sprint(p.Pending), p.Create.Round(10*time.Millisecond).String(),
			fmt.Sprintf("%.1f", p.Rate), fmtRatio(r), verdict)
		if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// baseLabel names the column of ratios to each dialect's first point.
func baseLabel(points []BacklogPoint) string {
	if len(points) == 0 {
		return "ratio"
	}
	return fmt.Sprintf("vs P=%d", points[0].Pending)
}
