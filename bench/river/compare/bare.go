package compare

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

// Bare runs the worker n times in total from concurrency goroutines, each run with a
// log file of its own in a temporary directory (removed afterwards), and returns the
// runs per second. It stops at the first failed run, or when ctx is done, with an
// error.
func Bare(ctx context.Context, n, concurrency int) (float64, error) {
	dir, err := os.MkdirTemp("", "cs-bench-bare-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	return runLoop(ctx, n, concurrency, func(_ context.Context, i int64) error {
		if err := runWorker(filepath.Join(dir, fmt.Sprintf("run-%d.log", i))); err != nil {
			return fmt.Errorf("bare run %d: %w", i, err)
		}
		return nil
	})
}

// runLoop calls run for i = 1…n from concurrency goroutines and returns the calls per
// second; it stops at the first error, or when ctx is done, with an error.
func runLoop(ctx context.Context, n, concurrency int, run func(ctx context.Context, i int64) error) (float64, error) {
	var next atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	start := time.Now()
	for range concurrency {
		g.Go(func() error {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				if err := gctx.Err(); err != nil {
					return err
				}
				if err := run(gctx, i); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	return float64(n) / time.Since(start).Seconds(), nil
}
