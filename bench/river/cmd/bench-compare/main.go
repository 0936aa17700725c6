// Command bench-compare prints the throughput of a bare fork/exec loop, River and
// Countersign's runner pool running the same no-op worker at the same concurrency on
// the same PostgreSQL server (issue #16); with -backlog the pool's throughput over
// its first completions as its backlog of pending tasks grows, on PostgreSQL and
// SQLite; with -scaleout one `countersign runner` process against four, and one River
// process against four, on sleep-bound tasks, with their lock waits and CPU per task
// (issue #34).
//
//	go run ./cmd/bench-compare -n 2000 -c 16
//	go run ./cmd/bench-compare -backlog
//	go run ./cmd/bench-compare -scaleout
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/countersign/countersign/bench/river/compare"
	"github.com/countersign/countersign/models/store"
)

func main() {
	n := flag.Int("n", 2000, "tasks (runs, jobs) each system completes")
	c := flag.Int("c", compare.DefaultConcurrency, "concurrency of every system")
	server := flag.String("postgres", compare.DefaultServer, "PostgreSQL server; a database is created on it (and dropped) per measurement")
	backlog := flag.Bool("backlog", false, "measure the pool's first completions with growing backlogs instead")
	repeat := flag.Int("repeat", 3, "with -backlog, measurements of each store and P (the table shows their median)")
	verbose := flag.Bool("v", false, "print River's and the pool's warnings")
	var so compare.ScaleOutOptions
	scaleout := flag.Bool("scaleout", false, "measure one process against several on sleep-bound tasks (issue #34) instead")
	flag.IntVar(&so.Slots, "slots", 8, "with -scaleout, slots per process (S)")
	flag.IntVar(&so.Procs, "procs", 4, "with -scaleout, processes of the scale-out row")
	flag.IntVar(&so.Agents, "agents", 4, "with -scaleout, worker agents sharing the product's slots")
	flag.DurationVar(&so.Duration, "duration", 20*time.Second, "with -scaleout, length of each measurement at the ideal (sets the task count)")
	flag.StringVar(&so.Countersign, "countersign-bin", "", "with -scaleout, the countersign binary for the runner processes (default: built from this repository)")
	flag.BoolVar(&so.RiverBench, "river-bench", false, "with -scaleout, River with riverbench's fetch timing instead of its defaults")
	child := flag.Bool(compare.RiverChildFlag, false, "internal: be one River process of -scaleout")
	childDB := flag.String("db", "", "internal: with -"+compare.RiverChildFlag+", the database")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var log *slog.Logger
	if *verbose {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	var err error
	switch {
	case *child:
		tuning := compare.RiverTuning{}
		if so.RiverBench {
			tuning = compare.RiverBench
		}
		err = compare.RiverChild(ctx, *childDB, *c, compare.SleepCommand, tuning, log)
	case *scaleout:
		so.Server, so.Log = *server, log
		err = runScaleOut(ctx, so)
	case *backlog:
		err = runBacklog(ctx, *server, *c, *repeat, log)
	default:
		err = runCompare(ctx, *n, *c, *server, log)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-compare:", err)
		os.Exit(1)
	}
}

func runCompare(ctx context.Context, n, c int, server string, log *slog.Logger) error {
	fmt.Printf("N=%d tasks, concurrency %d, PostgreSQL %s\n", n, c, redacted(server))
	r, err := compare.Run(ctx, compare.Options{N: n, Concurrency: c, Server: server, SandboxOff: true, RiverDefaults: true, Floor: true, Log: log})
	if err != nil {
		return err
	}
	return r.WriteTable(os.Stdout)
}

func runBacklog(ctx context.Context, server string, c, repeat int, log *slog.Logger) error {
	fmt.Printf("first %d completions (median of %d runs), concurrency %d, sandbox on, PostgreSQL settled (VACUUM ANALYZE) after creating the tasks; acceptance: >= %.1fx at P=%d of P=%d\n",
		compare.BacklogFirst, max(repeat, 1), c, compare.MinBacklogRatio, compare.BacklogSizes[len(compare.BacklogSizes)-1], compare.BacklogSizes[0])
	// Repetitions are interleaved, so that a slow spell of a shared machine spreads over
	// every P rather than falling on one.
	var points []compare.BacklogPoint
	for rep := range max(repeat, 1) {
		for _, dialect := range []string{store.DialectPostgres, store.DialectSQLite} {
			for _, p := range compare.BacklogSizes {
				pt, err := compare.Backlog(ctx, dialect, server, p, c, log)
				if err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "  run %d: %s P=%d: created in %s, %.1f tasks/s\n", rep+1, dialect, p, pt.Create.Round(time.Millisecond), pt.Rate)
				points = append(points, pt)
			}
		}
	}
	return compare.WriteBacklog(os.Stdout, points)
}

func runScaleOut(ctx context.Context, o compare.ScaleOutOptions) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	o.Exe = exe
	if o.Countersign == "" {
		dir, err := os.MkdirTemp("", "cs-bench-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if o.Countersign, err = compare.BuildCountersign(ctx, dir); err != nil {
			return err
		}
	}
	fmt.Printf("scale-out: tasks %q (%s each), %d slots per process, 1 and %d processes (%d worker agents share the product's slots), fresh database per row, PostgreSQL %s\n",
		compare.SleepCommand, compare.TaskTime, o.Slots, o.Procs, o.Agents, redacted(o.Server))
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	points, err := compare.ScaleOut(ctx, o)
	if err != nil {
		return err
	}
	return compare.WriteScaleOut(os.Stdout, points)
}

// redacted hides a password in a database URL.
func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
