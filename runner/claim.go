package runner

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/models"
)

// taskRun is one claimed task being run by this pool.
type taskRun struct {
	task     models.Task  // as of the last transaction that changed it
	agent    models.Agent // the worker agent doing it
	readyAt  time.Time    // when the task became ready (see Observer.Dispatched)
	takeover bool         // claimed from a runner whose lease expired
	ctx      context.Context
	cancel   context.CancelCauseFunc

	dispatched bool        // Observer.Dispatched was reported
	settled    atomic.Bool // the current attempt's outcome is being recorded
}

// settling reports whether the task's attempt is being (or was) recorded: a lease
// that disappears then was released by that very transaction, not lost.
func (tr *taskRun) settling() bool { return tr.settled.Load() }

// claim hands out, in one transaction, as many (ready task, idle agent) pairs as it
// can, at most ClaimBatch: it locks the worker agents and the ready tasks (skipping
// rows other runners' claims hold), assigns and starts each task for its agent with
// the runner as the actor — so the events are written with the change — and takes a
// lease on it.
func (p *Pool) claim(ctx context.Context) ([]*taskRun, error) {
	var runs []*taskRun
	err := p.store.InTx(ctx, func(tx models.Tx) error {
		runs = runs[:0]
		c, ok := tx.(models.Claimer)
		if !ok {
			return fmt.Errorf("runner: the store's transactions cannot claim tasks")
		}
		now := time.Now()
		loads, err := c.LockWorkers(ctx, now)
		if err != nil {
			return err
		}
		idle := make([]*models.WorkerLoad, 0, len(loads))
		var ids []int64
		roles := map[string]bool{}
		for i := range loads {
			l := &loads[i]
			if l.Running >= max(l.Agent.Concurrency, 1) {
				continue
			}
			idle = append(idle, l)
			ids = append(ids, l.Agent.ID)
			for _, r := range l.Agent.Roles {
				roles[r] = true
			}
		}
		if len(idle) == 0 {
			return nil
		}
		roleList := make([]string, 0, len(roles))
		for r := range roles {
			roleList = append(roleList, r)
		}
		ready, err := c.ReadyTasks(ctx, models.ReadyQuery{Now: now, Roles: roleList, AgentIDs: ids,
			Exclude: p.runningIDs(), Limit: p.cfg.ClaimBatch})
		if err != nil {
			return err
		}
		for i := range ready {
			t := &ready[i]
			l := pickAgent(t, idle)
			if l == nil {
				continue
			}
			tr, err := p.claimTask(ctx, tx, t, l.Agent, now)
			if models.ErrorCode(err) != "" && models.ErrorCode(err) != models.EINTERNAL {
				// A rule refused this one (it changed under us); the rest may go.
				p.log.Warn("task not claimable", "task_id", t.ID, "err", err)
				continue
			}
			if err != nil {
				return err
			}
			l.Running++
			runs = append(runs, tr)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return runs, nil
}

// pickAgent chooses the idle agent for t: its assignee when it has one, else the
// least busy idle agent with its role (ties to the oldest agent, for stable tests).
func pickAgent(t *models.Task, idle []*models.WorkerLoad) *models.WorkerLoad {
	var best *models.WorkerLoad
	for _, l := range idle {
		if l.Running >= max(l.Agent.Concurrency, 1) {
			continue
		}
		if t.AssigneeID != nil {
			if *t.AssigneeID == l.Agent.ID {
				return l
			}
			continue
		}
		if !l.Agent.HasRole(t.Role) {
			continue
		}
		if best == nil || l.Running < best.Running {
			best = l
		}
	}
	return best
}

// claimTask moves one locked ready task to in_progress for agent under this runner's
// lease, in tx.
func (p *Pool) claimTask(ctx context.Context, tx models.Tx, t *models.Task, agent models.Agent, now time.Time) (*taskRun, error) {
	tr := &taskRun{agent: agent, takeover: t.State == models.TaskInProgress}
	ready, err := p.readyTime(ctx, tx, t)
	if err != nil {
		return nil, err
	}
	tr.readyAt = ready
	prevOwner := t.LeaseOwner
	until := now.Add(p.cfg.Lease)

	switch t.State {
	case models.TaskPending:
		if err := p.svc.Apply(ctx, tx, p.runner, t, models.ActAssign, models.ActionInput{Agent: agent.Name}); err != nil {
			return nil, err
		}
		fallthrough
	case models.TaskAssigned:
		t.LeaseOwner, t.LeaseUntil = p.cfg.RunnerID, &until
		if err := p.svc.Apply(ctx, tx, p.runner, t, models.ActStart, models.ActionInput{}); err != nil {
			return nil, err
		}
	case models.TaskInProgress:
		// Sent back by a rejection (no lease), or its runner died (lease expired): the
		// dead runner's unfinished attempt is an infrastructure failure, not the
		// worker's, and does not use up the budget.
		if err := p.abandonAttempts(ctx, tx, t, prevOwner, now); err != nil {
			return nil, err
		}
		t.LeaseOwner, t.LeaseUntil = p.cfg.RunnerID, &until
		if err := tx.UpdateTask(ctx, t); err != nil {
			return nil, err
		}
	default:
		return nil, models.Errorf(models.ECONFLICT, "task %d is %s", t.ID, t.State)
	}
	if tr.takeover {
		// A fresh claim is announced by task.assigned/task.started; a takeover changes
		// no state, so it gets an event of its own.
		data := map[string]any{"runner_id": p.cfg.RunnerID, "agent": agent.Name, "lease_until": until}
		if prevOwner != "" {
			data["taken_over_from"] = prevOwner
		}
		if err := p.event(ctx, tx, "task.taken_over", t, data); err != nil {
			return nil, err
		}
	}
	tr.task = *t
	return tr, nil
}

// readyTime is when t became ready: its last change, its last dependency's
// verification, a dead runner's lease expiry, or this pool's start, whichever is
// latest.
func (p *Pool) readyTime(ctx context.Context, tx models.Tx, t *models.Task) (time.Time, error) {
	ready := t.UpdatedAt
	if len(t.DependsOn) > 0 {
		deps, err := tx.GetTasks(ctx, t.DependsOn)
		if err != nil {
			return time.Time{}, err
		}
		for _, d := range deps {
			if d.VerifiedAt != nil && d.VerifiedAt.After(ready) {
				ready = *d.VerifiedAt
			}
		}
	}
	if t.State == models.TaskInProgress && t.LeaseUntil != nil && t.LeaseUntil.After(ready) {
		ready = *t.LeaseUntil
	}
	if p.startedAt.After(ready) {
		ready = p.startedAt
	}
	return ready, nil
}

// abandonAttempts records the attempts a dead runner left running as infrastructure
// failures.
func (p *Pool) abandonAttempts(ctx context.Context, tx models.Tx, t *models.Task, prevOwner string, now time.Time) error {
	attempts, err := tx.ListAttempts(ctx, t.ID)
	if err != nil {
		return err
	}
	for i := range attempts {
		a := &attempts[i]
		if a.Outcome != models.OutcomeRunning {
			continue
		}
		owner := a.RunnerID
		if owner == "" {
			owner = prevOwner
		}
		a.Outcome, a.Stage = models.OutcomeInfra, models.StageInfra
		a.Diagnosis = fmt.Sprintf("runner %q stopped renewing its lease before the attempt finished; taken over by %q without using an attempt",
			owner, p.cfg.RunnerID)
		a.Checks = append(a.Checks, models.CheckResult{Stage: models.StageInfra, Verdict: models.VerdictError, Diagnosis: a.Diagnosis})
		fin := now
		a.FinishedAt = &fin
		if err := tx.UpdateAttempt(ctx, a); err != nil {
			return err
		}
		if err := p.event(ctx, tx, "attempt.finished", t, map[string]any{
			"attempt": a.Number, "outcome": a.Outcome, "stage": a.Stage, "diagnosis": a.Diagnosis, "agent_id": a.AgentID,
		}); err != nil {
			return err
		}
		p.observeAttempt(a.Outcome, a.Stage)
	}
	return nil
}

// event appends an event about t by the runner in tx.
func (p *Pool) event(ctx context.Context, tx models.Tx, typ string, t *models.Task, data any) error {
	e := &models.Event{Type: typ, TaskID: &t.ID, GoalID: t.GoalID, CreatedAt: time.Now().UTC()}
	if p.runner != nil && p.runner.ID != 0 {
		id := p.runner.ID
		e.ActorID = &id
	}
	if data != nil {
		b, err := jsonMarshal(data)
		if err != nil {
			return err
		}
		e.Data = b
	}
	return tx.AppendEvent(ctx, e)
}

func (p *Pool) observeAttempt(outcome, stage string) {
	if p.cfg.Observer != nil {
		p.cfg.Observer.AttemptFinished(outcome, stage)
	}
}
