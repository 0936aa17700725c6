package compare

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// RiverTuning sets River's fetch timing; zero fields keep River's defaults
// (FetchCooldown 100 ms, FetchPollInterval 1 s).
type RiverTuning struct {
	FetchCooldown     time.Duration
	FetchPollInterval time.Duration
}

// RiverBench is the tuning River's own throughput benchmark (cmd/river/riverbench)
// uses, whose comment calls it much better for throughput than the defaults: River's
// docs say throughput is limited by FetchCooldown.
var RiverBench = RiverTuning{FetchCooldown: 2 * time.Millisecond, FetchPollInterval: 20 * time.Millisecond}

// execArgs is the job the River worker runs: no arguments.
type execArgs struct{}

// Kind names the job kind in river_job.
func (execArgs) Kind() string { return "cs_bench_exec" }

// execWorker runs the worker once per job, its log in dir.
type execWorker struct {
	river.WorkerDefaults[execArgs]
	dir string
}

// Work runs the worker with a log file named after the job.
func (w *execWorker) Work(ctx context.Context, job *river.Job[execArgs]) error {
	return runWorker(filepath.Join(w.dir, fmt.Sprintf("job-%d.log", job.ID)))
}

// River measures River on a database of its own created on the server at serverURL
// (dropped afterwards): migrated with rivermigrate, n jobs inserted with InsertMany and
// the database settled (VACUUM ANALYZE) before the clock starts, one queue of
// MaxWorkers concurrency. It returns the jobs per second from the client's Start to the
// nth completed job (EventKindJobCompleted).
// A failed or cancelled job is an error. log receives River's logs (nil: none).
func River(ctx context.Context, serverURL string, n, concurrency int, tuning RiverTuning, log *slog.Logger) (rate float64, err error) {
	err = withDatabase(ctx, serverURL, func(dbURL string) error {
		rate, err = riverRun(ctx, dbURL, n, concurrency, tuning, orDiscard(log))
		return err
	})
	return rate, err
}

func riverRun(ctx context.Context, dbURL string, n, concurrency int, tuning RiverTuning, log *slog.Logger) (float64, error) {
	pcfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return 0, err
	}
	pcfg.MaxConns = int32(concurrency + 10)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: log})
	if err != nil {
		return 0, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return 0, fmt.Errorf("river migrate: %w", err)
	}
	dir, err := os.MkdirTemp("", "cs-bench-river-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	workers := river.NewWorkers()
	river.AddWorker(workers, &execWorker{dir: dir})
	client, err := river.NewClient(driver, &river.Config{
		FetchCooldown:     tuning.FetchCooldown,
		FetchPollInterval: tuning.FetchPollInterval,
		Logger:            log,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: concurrency}},
		Workers:           workers,
	})
	if err != nil {
		return 0, err
	}
	if err := insertJobs(ctx, client, n); err != nil {
		return 0, err
	}
	if err := settle(ctx, dbURL); err != nil {
		return 0, err
	}
	events, cancel := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: n + 100,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled},
	})
	defer cancel()

	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return 0, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		client.Stop(sctx)
	}()
	for done := 0; done < n; {
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("river: %d of %d jobs completed: %w", done, n, ctx.Err())
		case ev, ok := <-events:
			if !ok {
				return 0, errors.New("river: the subscription closed")
			}
			if ev.Kind != river.EventKindJobCompleted {
				return 0, fmt.Errorf("river: job %d: %s (errors %v)", ev.Job.ID, ev.Kind, ev.Job.Errors)
			}
			done++
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// insertJobs inserts n jobs in batches of at most 1000.
func insertJobs(ctx context.Context, client *river.Client[pgx.Tx], n int) error {
	const batch = 1000
	for left := n; left > 0; left -= batch {
		params := make([]river.InsertManyParams, min(left, batch))
		for i := range params {
			params[i] = river.InsertManyParams{Args: execArgs{}}
		}
		if _, err := client.InsertMany(ctx, params); err != nil {
			return fmt.Errorf("river insert: %w", err)
		}
	}
	return nil
}

// orDiscard returns log, or a logger that drops everything when log is nil.
func orDiscard(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}
