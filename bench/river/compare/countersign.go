package compare

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/runner"
	"github.com/countersign/countersign/runner/procs"
	"github.com/countersign/countersign/runner/sandbox"
	"github.com/countersign/countersign/runner/workspace"
)

// stallTimeout is how long a measurement waits without any attempt finishing before
// it gives up.
const stallTimeout = 60 * time.Second

// Countersign measures the runner pool on a database of its own created on the server
// at serverURL (dropped afterwards): n no-op tasks created and the database settled
// (VACUUM ANALYZE) before the clock starts, one worker agent of the given concurrency,
// the pool configured as `countersign serve` configures it with the sandbox in mode.
// It returns the tasks per second from the pool's Start to the nth finished attempt,
// and an error unless every attempt passed. log receives the pool's logs (nil: none).
func Countersign(ctx context.Context, serverURL string, n, concurrency int, mode sandbox.Mode, log *slog.Logger) (rate float64, err error) {
	err = withDatabase(ctx, serverURL, func(dbURL string) error {
		s, err := openSite(ctx, store.Config{DatabaseURL: dbURL}, concurrency)
		if err != nil {
			return err
		}
		defer s.close()
		if err := s.createTasks(ctx, n); err != nil {
			return err
		}
		if err := settle(ctx, dbURL); err != nil {
			return err
		}
		rate, err = s.runPool(ctx, mode, n, log)
		return err
	})
	return rate, err
}

// finishCounter is the pool's Observer: it counts finished attempts up to want, keeps
// the outcomes that did not pass, and closes reached at the want-th.
type finishCounter struct {
	mu      sync.Mutex
	want    int
	n       int
	failed  []string
	at      time.Time
	reached chan struct{}
}

// Dispatched ignores dispatch latencies.
func (o *finishCounter) Dispatched(time.Duration) {}

// AttemptFinished counts one attempt (those after the want-th are ignored).
func (o *finishCounter) AttemptFinished(outcome, stage string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n >= o.want {
		return
	}
	o.n++
	if outcome != models.OutcomePassed {
		o.failed = append(o.failed, outcome+"/"+stage)
	}
	if o.n == o.want {
		o.at = time.Now()
		close(o.reached)
	}
}

func (o *finishCounter) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n
}

// runPool starts a pool on the site as serve does (sandbox probed in mode and kept out
// of the data dir, workspaces confined by it, process groups recorded, serve's lease,
// poll and grace defaults), waits for want finished attempts and stops it. It returns
// want per second from Start to the want-th attempt.
func (s *site) runPool(ctx context.Context, mode sandbox.Mode, want int, log *slog.Logger) (float64, error) {
	sb := sandbox.Probe(mode).Protect(s.dataDir)
	if !sb.Ready() {
		return 0, errors.New(sb.Status())
	}
	ws, err := workspace.New(filepath.Join(s.dataDir, "work"))
	if err != nil {
		return 0, err
	}
	ws.Confine(sb)
	reg, err := procs.Open(filepath.Join(s.dataDir, "procs"))
	if err != nil {
		return 0, err
	}
	defer reg.Close()
	obs := &finishCounter{want: want, reached: make(chan struct{})}
	pool, err := runner.New(runner.Config{
		Sandbox:    sb,
		APIURL:     "http://127.0.0.1:9",
		Procs:      reg,
		Service:    s.svc,
		Workspaces: ws,
		RunnerID:   "bench-" + randomID(),
		Lease:      30 * time.Second,
		Poll:       5 * time.Second,
		Grace:      10 * time.Second,
		Observer:   obs,
		Log:        orDiscard(log),
	})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := pool.Start(ctx); err != nil {
		return 0, err
	}
	werr := waitFinished(ctx, obs)
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := pool.Stop(sctx); err != nil && werr == nil {
		werr = fmt.Errorf("stop the pool: %w", err)
	}
	if werr != nil {
		return 0, werr
	}
	if len(obs.failed) > 0 {
		return 0, fmt.Errorf("%d of %d attempts did not pass: %s", len(obs.failed), want, strings.Join(obs.failed[:min(5, len(obs.failed))], ", "))
	}
	return float64(want) / obs.at.Sub(start).Seconds(), nil
}

// waitFinished waits until obs reaches its target, ctx ends, or no attempt finishes
// for stallTimeout.
func waitFinished(ctx context.Context, obs *finishCounter) error {
	tick := time.NewTicker(stallTimeout)
	defer tick.Stop()
	last := -1
	for {
		select {
		case <-obs.reached:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("countersign: %d of %d attempts finished: %w", obs.count(), obs.want, ctx.Err())
		case <-tick.C:
			n := obs.count()
			if n == last {
				return fmt.Errorf("countersign: stalled at %d of %d attempts for %s", n, obs.want, stallTimeout)
			}
			last = n
		}
	}
}
