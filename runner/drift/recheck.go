package drift

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/internal/loop"
)

// Result is what a recheck found for one task.
type Result struct {
	TaskID int64
	// Changed are the fingerprinted paths that differ from what was verified; the
	// task is stale when it is not empty.
	Changed []string
	// Gone: the workspace no longer exists, so nothing was compared.
	Gone bool
	// Unchecked: the task has no fingerprint (verified by a person without a runner
	// pass, or before fingerprints existed) or is not verified.
	Unchecked bool
	// Fresh: the task was stale and its work is as verified again.
	Fresh bool
}

// String says the result in a few words, for the command line and flashes.
func (r Result) String() string {
	switch {
	case r.Unchecked:
		return fmt.Sprintf("task %d: no fingerprint to compare", r.TaskID)
	case r.Gone:
		return fmt.Sprintf("task %d: its workspace is gone; nothing compared", r.TaskID)
	case len(r.Changed) > 0:
		return fmt.Sprintf("task %d: STALE, changed since verification: %s", r.TaskID, (&models.Drift{Changed: r.Changed}).Summary())
	case r.Fresh:
		return fmt.Sprintf("task %d: as verified again (was stale)", r.TaskID)
	}
	return fmt.Sprintf("task %d: as verified", r.TaskID)
}

// DriftRecorder is what the Rechecker needs of the task aggregate
// (models.TaskService): recording drift on a verified task and clearing it.
type DriftRecorder interface {
	RecordDrift(ctx context.Context, actor *models.Agent, taskID int64, changed []string) (*models.Task, error)
	ClearDrift(ctx context.Context, actor *models.Agent, taskID int64) (*models.Task, error)
}

// Rechecker compares verified tasks' workspaces with their fingerprints and records
// what it finds through the task aggregate (models.TaskService.RecordDrift,
// ClearDrift). Start runs it periodically; Task and Tasks run it once.
type Rechecker struct {
	store    models.Store
	tasks    DriftRecorder
	log      *slog.Logger
	interval time.Duration
	loop     loop.Loop
}

// NewRechecker returns a Rechecker reading tasks from store and recording drift
// through tasks; interval is the periodic pass's (Start), zero for
// none. log receives the periodic pass's findings (nil: discarded).
func NewRechecker(store models.Store, tasks DriftRecorder, interval time.Duration, log *slog.Logger) *Rechecker {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Rechecker{store: store, tasks: tasks, interval: interval, log: log}
}

// Task rechecks one task as actor (who the events name).
func (r *Rechecker) Task(ctx context.Context, actor *models.Agent, id int64) (Result, error) {
	t, err := r.store.GetTask(ctx, id)
	if err != nil {
		return Result{}, err
	}
	return r.check(ctx, actor, t)
}

// Tasks rechecks every verified task (of one goal when goalID is not 0) as actor; it
// stops at the first error, returning what it found before.
func (r *Rechecker) Tasks(ctx context.Context, actor *models.Agent, goalID int64) ([]Result, error) {
	var out []Result
	f := models.TaskFilter{State: models.TaskVerified, GoalID: goalID, Limit: 500}
	for {
		page, err := r.store.ListTasks(ctx, f)
		if err != nil {
			return out, err
		}
		for i := range page {
			res, err := r.check(ctx, actor, &page[i])
			if err != nil {
				return out, fmt.Errorf("task %d: %w", page[i].ID, err)
			}
			out = append(out, res)
		}
		if len(page) < f.Limit {
			return out, nil
		}
		f.AfterID = page[len(page)-1].ID
	}
}

func (r *Rechecker) check(ctx context.Context, actor *models.Agent, t *models.Task) (Result, error) {
	res := Result{TaskID: t.ID}
	if t.State != models.TaskVerified || t.Fingerprint == nil {
		res.Unchecked = true
		return res, nil
	}
	changed, err := Compare(ctx, t.Fingerprint)
	switch {
	case errors.Is(err, ErrWorkspaceGone):
		res.Gone = true
		return res, nil
	case err != nil:
		return res, err
	case len(changed) > 0:
		res.Changed = changed
		_, err = r.tasks.RecordDrift(ctx, actor, t.ID, changed)
	case t.Drift != nil:
		res.Fresh = true
		_, err = r.tasks.ClearDrift(ctx, actor, t.ID)
	}
	if models.ErrorCode(err) == models.ECONFLICT {
		// Reopened between the read and the write: no longer verified, nothing to mark.
		return Result{TaskID: t.ID, Unchecked: true}, nil
	}
	return res, err
}

// Start runs a pass over every verified task every interval, as the runner agent,
// until Stop; the first pass comes after one interval, not at start-up. It does
// nothing when the interval is zero.
func (r *Rechecker) Start(ctx context.Context, runner *models.Agent) error {
	if r.interval <= 0 {
		return nil
	}
	return r.loop.Start(ctx, r.interval, false, func(ctx context.Context) { r.pass(ctx, runner) })
}

// pass rechecks every verified task once and logs what changed.
func (r *Rechecker) pass(ctx context.Context, runner *models.Agent) {
	results, err := r.Tasks(ctx, runner, 0)
	if err != nil && ctx.Err() == nil {
		r.log.Warn("recheck pass failed", "err", err)
	}
	for _, res := range results {
		if len(res.Changed) > 0 {
			r.log.Warn("verified work changed", "task_id", res.TaskID, "changed", res.Changed)
		}
	}
}

// Stop ends the periodic pass and waits for it (or for ctx); calling it again, or
// without Start, does nothing.
func (r *Rechecker) Stop(ctx context.Context) error { return r.loop.Stop(ctx) }
