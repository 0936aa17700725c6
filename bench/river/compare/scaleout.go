package compare

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// TaskTime is how long a scale-out task runs: long enough that the slots, not the
// CPU, bound the throughput, so the ideal is slots / TaskTime.
const TaskTime = 500 * time.Millisecond

// SleepCommand is the scale-out worker: it reads the brief and sleeps TaskTime.
const SleepCommand = "cat >/dev/null; sleep 0.5"

// Issue #34's acceptance figures for the scale-out row, printed beside the measured.
const (
	// TargetOfIdeal is the least share of the ideal the four processes must reach.
	TargetOfIdeal = 0.85
	// TargetScaleRatio is the least throughput of the four processes over one.
	TargetScaleRatio = 3.4
	// TargetLockCross is the largest share of samples in which a backend of one
	// process waits for a lock a backend of another holds.
	TargetLockCross = 0.10
	// TargetCPUOfRiver is the most CPU per task (processes and backends) the
	// product may spend per River's, same configuration, same run.
	TargetCPUOfRiver = 2.0
)

// Systems the scale-out measurement compares.
const (
	SystemCountersign = "countersign"
	SystemRiver       = "river"
)

// ScaleOutOptions says what ScaleOut measures.
type ScaleOutOptions struct {
	// Server is the PostgreSQL server (DefaultServer when empty); every measurement
	// gets a fresh database on it.
	Server string
	// Slots is S, the slots of one process (8 when zero): the single-process row has
	// S, the scale-out row Procs × S.
	Slots int
	// Procs is the processes of the scale-out row (4 when zero).
	Procs int
	// Agents is how many worker agents share the product's slots (4 when zero), as
	// a fleet runs several; each gets an equal share of the row's slots.
	Agents int
	// Duration is how long each measurement would last at the ideal (20 s when
	// zero): it sets the task count.
	Duration time.Duration
	// Countersign is the countersign binary the runner processes run.
	Countersign string
	// Exe is bench-compare's own binary, started with RiverChildFlag for River.
	Exe string
	// RiverBench gives River riverbench's fetch timing instead of its defaults.
	RiverBench bool
	// Log receives the measurement's progress (nil: none).
	Log *slog.Logger
}

func (o *ScaleOutOptions) defaults() {
	o.Server = cmpOr(o.Server, DefaultServer)
	o.Slots = cmpOr(o.Slots, 8)
	o.Procs = cmpOr(o.Procs, 4)
	o.Agents = cmpOr(o.Agents, 4)
	o.Duration = cmpOr(o.Duration, 20*time.Second)
}

func cmpOr[T comparable](v, d T) T {
	var zero T
	if v == zero {
		return d
	}
	return v
}

// ScalePoint is one scale-out measurement, over the window from 10 % to 90 % of its
// tasks finished.
type ScalePoint struct {
	System      string
	Procs       int
	Slots       int
	Tasks       int
	windowStats // the window's figures
}

// Ideal is the tasks per second the slots allow: every slot busy all the time.
func (p ScalePoint) Ideal() float64 { return float64(p.Slots) / TaskTime.Seconds() }

// Rate is the tasks finished per second in the window.
func (p ScalePoint) Rate() float64 { return float64(p.Done) / p.Took.Seconds() }

// perTask divides d by the tasks finished in the window.
func (p ScalePoint) perTask(d time.Duration) time.Duration {
	if p.Done == 0 {
		return 0
	}
	return d / time.Duration(p.Done)
}

// CPUPerTask is the CPU per task of the measured processes and of their backends
// together, the workers they run left out.
func (p ScalePoint) CPUPerTask() time.Duration { return p.perTask(p.Self + p.Backend) }

// ScaleOut measures each system with one process of S slots and with Procs processes
// of S slots each, the product first, each on a fresh database holding tasks for
// Duration at the ideal, created and settled before the processes start.
func ScaleOut(ctx context.Context, o ScaleOutOptions) ([]ScalePoint, error) {
	o.defaults()
	var points []ScalePoint
	for _, system := range []string{SystemCountersign, SystemRiver} {
		for _, procs := range []int{1, o.Procs} {
			p := ScalePoint{System: system, Procs: procs, Slots: procs * o.Slots}
			p.Tasks = int(p.Ideal() * o.Duration.Seconds())
			err := withDatabase(ctx, o.Server, func(dbURL string) (err error) {
				p.windowStats, err = measureFleet(ctx, o, p, dbURL)
				return err
			})
			if err != nil {
				return points, fmt.Errorf("%s, %d processes: %w", system, procs, err)
			}
			orDiscard(o.Log).Info("scale-out", "system", system, "procs", procs, "tasks/s", fmt.Sprintf("%.1f", p.Rate()))
			points = append(points, p)
		}
	}
	return points, nil
}

// fleetSpec is how one system is set up, started and counted.
type fleetSpec struct {
	prefix  string
	doneSQL string
	failSQL string
	prepare func() error
	args    func(i int, dir string) []string
	bin     string
}

// measureFleet prepares the database at dbURL for p, starts p's processes, samples
// them until p.Tasks are done, stops them, and checks that every task passed.
func measureFleet(ctx context.Context, o ScaleOutOptions, p ScalePoint, dbURL string) (windowStats, error) {
	f := fleetFor(ctx, o, p, dbURL)
	if err := f.prepare(); err != nil {
		return windowStats{}, err
	}
	if err := settle(ctx, dbURL); err != nil {
		return windowStats{}, err
	}
	var procs []*fleetProc
	stopped := false
	defer func() {
		if !stopped {
			stopAll(procs)
		}
	}()
	for i := range p.Procs {
		proc, err := startProc(fmt.Sprintf("%s-%d", p.System, i), f.bin, func(dir string) []string { return f.args(i, dir) })
		if err != nil {
			return windowStats{}, err
		}
		procs = append(procs, proc)
	}
	s, err := newSampler(ctx, dbURL, f.doneSQL, f.prefix, pids(procs))
	if err != nil {
		return windowStats{}, err
	}
	defer s.close()
	runErr := s.run(ctx, p.Tasks)
	stopped = true
	if err := errors.Join(runErr, stopAll(procs)); err != nil {
		return windowStats{}, err
	}
	var failed int
	if err := s.conn.QueryRow(ctx, f.failSQL).Scan(&failed); err != nil {
		return windowStats{}, err
	}
	if failed > 0 {
		return windowStats{}, fmt.Errorf("%d tasks did not pass", failed)
	}
	return window(s.samples, p.Tasks/10, p.Tasks*9/10)
}

// fleetFor returns how p's system is set up on dbURL.
func fleetFor(ctx context.Context, o ScaleOutOptions, p ScalePoint, dbURL string) fleetSpec {
	if p.System == SystemRiver {
		return fleetSpec{
			prefix:  "cs-bench-river-",
			doneSQL: `SELECT count(*) FROM river_job WHERE state = 'completed'`,
			failSQL: `SELECT count(*) FROM river_job WHERE state <> 'completed'`,
			prepare: func() error { return riverPrepare(ctx, dbURL, p.Tasks) },
			bin:     o.Exe,
			args: func(i int, _ string) []string {
				return riverChildArgs(withAppName(dbURL, fmt.Sprintf("cs-bench-river-%d", i)), o.Slots, o.RiverBench)
			},
		}
	}
	return fleetSpec{
		prefix:  "cs-bench-cs-",
		doneSQL: `SELECT count(*) FROM attempts WHERE outcome <> '` + models.OutcomeRunning + `'`,
		failSQL: `SELECT count(*) FROM attempts WHERE outcome <> '` + models.OutcomePassed + `'`,
		prepare: func() error { return countersignPrepare(ctx, o, p, dbURL) },
		bin:     o.Countersign,
		args: func(i int, dir string) []string {
			return []string{"runner", "--database-url", withAppName(dbURL, fmt.Sprintf("cs-bench-cs-%d", i)),
				"--data-dir", filepath.Join(dir, "data"), "--runner-id", fmt.Sprintf("bench-%d", i),
				"--evaluator", "none", "--log-level", "warn"}
		},
	}
}

// countersignPrepare migrates the database, creates o.Agents worker agents running
// SleepCommand that share p's slots, and p.Tasks pending tasks.
func countersignPrepare(ctx context.Context, o ScaleOutOptions, p ScalePoint, dbURL string) error {
	if p.Slots%o.Agents != 0 {
		return fmt.Errorf("%d slots do not split over %d agents", p.Slots, o.Agents)
	}
	agents := make([]*models.Agent, o.Agents)
	for i := range agents {
		agents[i] = benchAgent(fmt.Sprintf("bench-%d", i), SleepCommand, p.Slots/o.Agents)
	}
	s, err := openSiteWith(ctx, store.Config{DatabaseURL: withAppName(dbURL, "cs-bench-setup")}, agents)
	if err != nil {
		return err
	}
	defer s.close()
	return s.createTasks(ctx, p.Tasks)
}

// riverPrepare migrates the database for River and inserts n jobs.
func riverPrepare(ctx context.Context, dbURL string, n int) error {
	pool, err := pgxpool.New(ctx, withAppName(dbURL, "cs-bench-setup"))
	if err != nil {
		return err
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: orDiscard(nil)})
	if err != nil {
		return err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river migrate: %w", err)
	}
	// An insert-only client: no queues, no workers.
	client, err := river.NewClient[pgx.Tx](driver, &river.Config{Logger: orDiscard(nil)})
	if err != nil {
		return err
	}
	return insertJobs(ctx, client, n)
}
