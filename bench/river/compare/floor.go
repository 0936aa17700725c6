package compare

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/countersign/countersign/runner/sandbox"
	"github.com/countersign/countersign/runner/worker"
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
	return runLoop(ctx, n, concurrency, func(ctx context.Context, i int64) error {
		res, err := worker.Run(ctx, worker.Spec{
			Command: Command, Dir: dir, Stdin: bytes.NewReader(brief), Confine: c,
			LogPath: filepath.Join(dir, fmt.Sprintf("run-%d.log", i)),
		})
		if err != nil {
			return fmt.Errorf("confined run %d: %w", i, err)
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("confined run %d: exit code %d", i, res.ExitCode)
		}
		return nil
	})
}
