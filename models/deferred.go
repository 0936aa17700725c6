package models

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/countersign/countersign/models/contract"
)

// Statuses of a goal's deferred checks.
const (
	DeferredPending = "pending" // waiting for a runner
	DeferredRunning = "running"
	DeferredPassed  = "passed"
	DeferredFailed  = "failed"
)

// DeferredChecks are the criteria with timing deferred of a goal's verified tasks
// (e2e, integration): they run once the goal reaches pending_verify, in the goal's
// final workspace, and the lead may verify the goal only once they passed.
type DeferredChecks struct {
	Status string `json:"status"`
	// Criteria are the deferred criteria to run, each once however many tasks name it,
	// with the task that named it first.
	Criteria []DeferredCriterion `json:"criteria"`
	// Runner and StartedAt say who runs them since when; a run that has not finished
	// since longer than DeferredStale is taken over (its runner died).
	Runner     string     `json:"runner,omitempty"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// Results are the criteria's verdicts, in Criteria's order, once they ran.
	Results []CriterionResult `json:"results,omitempty"`
	// Diagnosis says what failed, or why the checks could not run.
	Diagnosis string `json:"diagnosis,omitempty"`
	// Output is the tail of the failing commands' output, for the goal page.
	Output string `json:"output,omitempty"`
}

// DeferredCriterion is one deferred criterion and the task whose contract has it.
type DeferredCriterion struct {
	TaskID    int64              `json:"task_id"`
	Criterion contract.Criterion `json:"criterion"`
}

// DeferredStale is how long a deferred run may go without finishing before another
// runner takes it over (its runner died).
const DeferredStale = 30 * time.Minute

// Passed reports whether the goal may be verified as far as deferred checks go: there
// are none, or they passed.
func (d *DeferredChecks) Passed() bool { return d == nil || d.Status == DeferredPassed }

// deferredOf collects the deferred criteria of tasks (the goal's), each command or
// activity once; nil when there is none.
func deferredOf(tasks []Task) *DeferredChecks {
	var d DeferredChecks
	seen := map[string]bool{}
	for _, t := range tasks {
		if t.State != TaskVerified || t.Fingerprint == nil {
			continue // only work the runner passed is checked: a person's work never ran its criteria
		}
		for _, c := range t.Contract.Verification.Criteria {
			key := c.Activity + "\x00" + c.Command
			if c.Timing != contract.TimingDeferred || seen[key] {
				continue
			}
			seen[key] = true
			d.Criteria = append(d.Criteria, DeferredCriterion{TaskID: t.ID, Criterion: c})
		}
	}
	if len(d.Criteria) == 0 {
		return nil
	}
	d.Status = DeferredPending
	return &d
}

// armDeferred sets g's deferred checks as g reaches pending_verify: pending when its
// verified tasks have deferred criteria, none otherwise.
func armDeferred(ctx context.Context, tx Tx, g *Goal) error {
	var tasks []Task
	f := TaskFilter{GoalID: g.ID, State: TaskVerified, Limit: 500}
	for {
		page, err := tx.ListTasks(ctx, f)
		if err != nil {
			return err
		}
		tasks = append(tasks, page...)
		if len(page) < f.Limit {
			break
		}
		f.AfterID = page[len(page)-1].ID
	}
	slices.SortFunc(tasks, func(a, b Task) int { return int(a.ID - b.ID) })
	g.Deferred = deferredOf(tasks)
	return nil
}

// moveDeferred keeps g's deferred checks in step with its state, which just moved
// from from: armed as it reaches pending_verify, kept while it is verified (they
// passed), dropped otherwise: its tasks change, so the checks run again on what they
// become.
func (s *GoalService) moveDeferred(ctx context.Context, tx Tx, g *Goal, from GoalState) error {
	switch g.State {
	case GoalPendingVerify:
		return armDeferred(ctx, tx, g)
	case GoalVerified:
	default:
		g.Deferred = nil
	}
	return nil
}

// ClaimDeferred hands goal id's pending deferred checks (or a run whose runner has not
// finished within DeferredStale) to runnerID, marking them running. ok is false when
// there is nothing to run: another runner has them, they finished, or the goal is no
// longer waiting for verification.
func (s *GoalService) ClaimDeferred(ctx context.Context, runner *Agent, id int64, runnerID string) (g *Goal, ok bool, err error) {
	err = s.store.InTx(ctx, func(tx Tx) error {
		g, err = tx.LockGoal(ctx, id)
		if err != nil {
			return err
		}
		d := g.Deferred
		now := s.now()
		stale := d != nil && d.Status == DeferredRunning && d.StartedAt != nil && now.Sub(*d.StartedAt) > DeferredStale
		if g.State != GoalPendingVerify || d == nil || (d.Status != DeferredPending && !stale) {
			return nil
		}
		d.Status, d.Runner, d.StartedAt, d.FinishedAt, d.Results, d.Diagnosis, d.Output = DeferredRunning, runnerID, &now, nil, nil, "", ""
		g.UpdatedAt = now
		if err := tx.UpdateGoal(ctx, g); err != nil {
			return err
		}
		ok = true
		return s.emit(ctx, tx, "goal.deferred_started", runner, nil, &g.ID, map[string]any{"runner_id": runnerID, "criteria": len(d.Criteria)})
	})
	return g, ok, err
}

// RecordDeferred records the outcome of the deferred run runnerID claimed: passed when
// every result passed, failed otherwise (diagnosis and output say why, shown on the
// goal page, where the lead rejects the goal with fix tasks). A run the goal no longer
// waits for (rejected meanwhile, taken over) is dropped.
func (s *GoalService) RecordDeferred(ctx context.Context, runner *Agent, id int64, runnerID string, results []CriterionResult, diagnosis, output string) (*Goal, error) {
	var out *Goal
	err := s.store.InTx(ctx, func(tx Tx) error {
		g, err := tx.LockGoal(ctx, id)
		if err != nil {
			return err
		}
		out = g
		d := g.Deferred
		if g.State != GoalPendingVerify || d == nil || d.Status != DeferredRunning || d.Runner != runnerID {
			return nil
		}
		now := s.now()
		d.Status, d.FinishedAt, d.Results = DeferredPassed, &now, results
		d.Diagnosis, d.Output = contract.Truncate(diagnosis, 4000), contract.Truncate(output, 16000)
		for _, r := range results {
			if r.Status != VerdictPass {
				d.Status = DeferredFailed
			}
		}
		if len(results) != len(d.Criteria) {
			d.Status = DeferredFailed
			if d.Diagnosis == "" {
				d.Diagnosis = fmt.Sprintf("%d of %d deferred criteria reported a verdict", len(results), len(d.Criteria))
			}
		}
		g.UpdatedAt = now
		if err := tx.UpdateGoal(ctx, g); err != nil {
			return err
		}
		return s.emit(ctx, tx, "goal.deferred_"+d.Status, runner, nil, &g.ID, map[string]any{"criteria": len(d.Criteria), "diagnosis": d.Diagnosis})
	})
	return out, err
}
