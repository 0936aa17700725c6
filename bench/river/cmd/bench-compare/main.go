// Command bench-compare prints the throughput of a bare fork/exec loop, River and
// Countersign's runner pool running the same no-op worker at the same concurrency on
// the same PostgreSQL server (issue #16), and with -backlog the pool's throughput over
// its first completions as its backlog of pending tasks grows, on PostgreSQL and
// SQLite.
//
//	go run ./cmd/bench-compare -n 2000 -c 16
//	go run ./cmd/bench-compare -backlog
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
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var log *slog.Logger
	if *verbose {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	var err error
	if *backlog {
		err = runBacklog(ctx, *server, *c, *repeat, log)
	} else {
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

// redacted hides a password in a database URL.
func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
