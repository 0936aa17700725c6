package compare

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/runner/sandbox"
	"github.com/countersign/countersign/runner/worker"
	"golang.org/x/sync/errgroup"
)

// Confined runs the worker n times in total from concurrency goroutines through the
// product's own worker.Run, confined as the runner confines a worker (a workspace and
// temp dir writable, the system readable, three ports), each run with a log file of
// its own; there is no database and no runner around it. It returns the runs per
// second: the ceiling confinement alone puts on the pool, to read next to Bare.
func Confined(ctx context.Context, n, concurrency int) (float64, error) {
	sb := sandbox.Probe(sandbox.ModeOn)
	if !sb.Ready() {
		return 0, fmt.Errorf("confined loop: %s", sb.Status())
	}
	dir, err := os.MkdirTemp("", "cs-bench-confined-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	c := &worker.Confinement{Sandbox: sb, Policy: sandbox.Policy{
		ReadExec:   sandbox.SystemReadPaths(os.Getenv("PATH")),
		ReadWrite:  []string{dir},
		ConnectTCP: []uint16{80, 443, 8080},
	}}
	brief := []byte(Brief)
	var next atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	start := time.Now()
	for range concurrency {
		g.Go(func() error {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				res, err := worker.Run(gctx, worker.Spec{
					Command: Command, Dir: dir, Stdin: bytes.NewReader(brief), Confine: c,
					LogPath: filepath.Join(dir, fmt.Sprintf("run-%d.log", i)),
				})
				if err != nil {
					return fmt.Errorf("confined run %d: %w", i, err)
				}
				if res.ExitCode != 0 {
					return fmt.Errorf("confined run %d: exit code %d", i, res.ExitCode)
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
