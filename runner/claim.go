package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
	// budgetWaits counts the attempts in a row that waited for a budget's
	// reservations to settle: each waits longer (see budgetWait).
	budgetWaits int
	ctx         context.Context
	cancel      context.CancelCauseFunc

	// attempts are the task's attempts, oldest first: read in the claim and kept up
	// to date by this pool, which alone records attempts of the task while it holds
	// the lease.
	attempts []models.Attempt
	// next is the first attempt when the claim already prepared it and recorded its
	// start (or found that it cannot be prepared); nil otherwise.
	next *attemptRun

	dispatched bool        // Observer.Dispatched was reported
	settled    atomic.Bool // the current attempt's outcome is being recorded
	// fresh says the claim starts a round (the task was pending or assigned: new,
	// retried or reassigned): its first attempt checks readiness before it begins.
	fresh bool
	// blocked says the claim blocked the task as not ready: nothing to run.
	blocked bool
	// reviewNext says the task's next attempt is the review alone (reviewOnlyNext):
	// the claim found the fix task of the last attempt's failed review round verified
	// (reviewFixVerified), or the settle deferred the task to its parallel batch's
	// review (batchReviewNext).
	reviewNext bool
}

// settling reports whether the task's attempt is being (or was) recorded: a lease
// that disappears then was released by that very transaction, not lost.
func (tr *taskRun) settling() bool { return tr.settled.Load() }

// claim hands out, in one transaction, as many (ready task, idle agent) pairs as it
// can, at most ClaimBatch: it locks the ready tasks and, for each, a free slot of the
// agent that takes it (skipping rows other runners' claims hold; no agent row is
// locked, so claims by several runners run side by side), assigns and starts each task
// for its agent with the runner as the actor — so the events are written with the
// change — takes a lease on it, and records the start of its first attempt (see
// beginInClaim). more reports that the batch was full: another claim may find more.
//
// Locks are taken in one order, task rows then slot rows, and slot rows are never
// waited for (SKIP LOCKED), so two claims cannot deadlock on them.
//
// A claim that began runs to its end whatever happens to ctx: cancelling it during the
// commit could leave a claim committed that the pool believes failed (a lease and a
// running attempt that only the lease's expiry would recover).
func (p *claimLoop) claim(ctx context.Context) (runs []*taskRun, more bool, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	err = p.inTx(ctx, func(tx models.Tx) error {
		runs, more = runs[:0], false
		c, ok := models.Tx(unwrapTx(tx)).(models.Claimer)
		if !ok {
			return fmt.Errorf("runner: the store's transactions cannot claim tasks")
		}
		now := time.Now()
		loads, err := c.WorkerLoads(ctx, now)
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
			Exclude: p.exec.runningIDs(), Limit: p.cfg.ClaimBatch})
		if err != nil {
			return err
		}
		if runs, err = p.claimReady(ctx, tx, c, ready, idle, now); err != nil {
			return err
		}
		// The query left ready tasks out, and an agent is still idle to take them.
		more = len(ready) >= p.cfg.ClaimBatch && slices.ContainsFunc(idle, func(l *models.WorkerLoad) bool {
			return l.Running < max(l.Agent.Concurrency, 1)
		})
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return runs, more, nil
}

// claimReady claims the locked ready tasks, each with some idle agent, through one
// models.WriteBehind: the claim's writes and its rule reads of the tasks' histories cost
// a few statements for the whole batch (see docs/runner.md, "Claims and agent slots").
// Blocked tasks are not among the runs.
func (p *claimLoop) claimReady(ctx context.Context, tx models.Tx, c models.Claimer, ready []models.Task, idle []*models.WorkerLoad, now time.Time) ([]*taskRun, error) {
	var runs []*taskRun
	bw, _ := models.Tx(unwrapTx(tx)).(models.BatchWriter)
	wb := models.NewWriteBehind(tx, bw)
	er, _ := models.Tx(unwrapTx(tx)).(models.TaskEventsReader)
	readyIDs := make([]int64, len(ready))
	for i := range ready {
		readyIDs[i] = ready[i].ID
	}
	if len(ready) == 0 {
		return nil, nil
	}
	if err := wb.PrefetchTaskEvents(ctx, er, readyIDs); err != nil {
		return nil, err
	}
	slots, err := lockSlots(ctx, c, idle, len(ready), now)
	if err != nil {
		return nil, err
	}
	for i := range ready {
		tr, l, err := p.claimWithSomeAgent(ctx, wb, c, slots, &ready[i], idle, now)
		if err != nil {
			return nil, err
		}
		if tr == nil || tr.blocked {
			if tr != nil {
				slots.giveBack(tr.task.ID) // blocked in this claim: not ready
			}
			continue // refused by a rule, no slot free, or not ready
		}
		l.Running++
		runs = append(runs, tr)
	}
	if err := wb.Flush(ctx); err != nil {
		return nil, err
	}
	if err := c.AssignSlots(ctx, p.cfg.RunnerID, slots.taken); err != nil {
		return nil, err
	}
	for _, tr := range runs {
		if ar := tr.next; ar != nil && ar.token != "" && ar.tokenID == 0 {
			ar.tokenID = wb.TokenID(models.HashSecret(ar.token)) // the token was held until now
		}
	}
	return runs, nil
}

// claimWithSomeAgent claims t for the agent pickAgent chooses, in a slot of that
// agent's (slots, locked when the claim began). An agent without a free slot for this
// claim (other runners took them since WorkerLoads read them) counts as full and the
// next is tried. When a rule refuses that agent (a hat it wears conflicts with
// building t, say) and t has no assignee, its slot is given back and the next idle
// agent with the role is tried, so that one agent's conflict does not keep t from
// every other agent on every wake. A nil taskRun with a nil error means no agent could
// take t now. The claim's writes are buffered (claimTask), so a refused try leaves
// nothing behind; each try starts from t as it was read.
func (p *claimLoop) claimWithSomeAgent(ctx context.Context, tx *models.WriteBehind, c models.Claimer, slots *slotPool, t *models.Task, idle []*models.WorkerLoad, now time.Time) (*taskRun, *models.WorkerLoad, error) {
	var refused []int64
	if t.State == models.TaskInProgress {
		// Taken over: the slot of its dead lease may still name it; freed first, so
		// that the task never holds two (a runner back with the same id would
		// otherwise see both as its own).
		if err := c.FreeSlots(ctx, t.ID); err != nil {
			return nil, nil, err
		}
	}
	for {
		l := pickAgent(t, idle, refused...)
		if l == nil {
			return nil, nil, nil
		}
		if !slots.take(l.Agent.ID, t.ID) {
			l.Running = max(l.Agent.Concurrency, 1)
			continue
		}
		try := *t
		tr, err := p.claimTask(ctx, tx, &try, l.Agent, now)
		if err == nil {
			return tr, l, nil
		}
		code := models.ErrorCode(err)
		if code == "" || code == models.EINTERNAL {
			return nil, nil, err
		}
		slots.giveBack(t.ID)
		if code == models.EFORBIDDEN && t.AssigneeID == nil {
			p.log.Info("agent may not take the task; trying another", "task_id", t.ID, "agent", l.Agent.Name, "err", err)
			refused = append(refused, l.Agent.ID)
			continue
		}
		// A rule refused this one (it changed under us); the rest may go.
		p.log.Warn("task not claimable", "task_id", t.ID, "err", err)
		return nil, nil, nil
	}
}

// scratchCanaryOff lets a canary task work in its agent's checkout like any task: for
// the test that shows what the scratch workspace keeps from landing.
var scratchCanaryOff bool

// pickAgent chooses the idle agent for t, other than those in except: its assignee
// when it has one, else the least busy idle agent with its role (ties to the oldest
// agent, for stable tests).
func pickAgent(t *models.Task, idle []*models.WorkerLoad, except ...int64) *models.WorkerLoad {
	var best *models.WorkerLoad
	for _, l := range idle {
		if l.Running >= max(l.Agent.Concurrency, 1) || slices.Contains(except, l.Agent.ID) {
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
// lease, in tx. Its writes (the task row, the attempt, its token, the events) are held
// by tx until the batch ends (claim flushes them with one statement per table), and
// dropped when it fails, so that a refused claim leaves nothing behind for the rest of
// the batch.
func (p *claimLoop) claimTask(ctx context.Context, tx *models.WriteBehind, t *models.Task, agent models.Agent, now time.Time) (*taskRun, error) {
	m := tx.Mark()
	tr, err := p.claimTaskIn(ctx, tx, t, agent, now)
	if err != nil {
		tx.Undo(m)
		return nil, err
	}
	return tr, nil
}

func (p *claimLoop) claimTaskIn(ctx context.Context, tx models.Tx, t *models.Task, agent models.Agent, now time.Time) (*taskRun, error) {
	tr := &taskRun{agent: agent, takeover: t.State == models.TaskInProgress, fresh: t.State != models.TaskInProgress}
	if t.Canary != "" && !scratchCanaryOff {
		// A canary task works in a fresh scratch directory whatever the agent's
		// checkout: with no repository there is no branch, no commit and nothing to
		// land, so its "pass" can never reach the team's code.
		tr.agent.Workdir, tr.agent.Worktree, tr.agent.TargetBranch = "", false, ""
	}
	// A task that was never started (start sets the builder) has no attempts: only
	// the runner records attempts, of tasks in progress.
	started := t.BuilderID != nil
	var attempts []models.Attempt
	ready, err := p.readyTime(ctx, tx, t)
	if err != nil {
		return nil, err
	}
	tr.readyAt = ready
	prevOwner := t.LeaseOwner
	until := now.Add(p.cfg.Lease)

	switch t.State {
	case models.TaskPending, models.TaskAssigned:
		// Assign (when pending) and start in one walk: one write of the task row.
		t.LeaseOwner, t.LeaseUntil = p.cfg.RunnerID, &until
		var moves []models.Move
		if t.State == models.TaskPending {
			moves = append(moves, models.Move{Act: models.ActAssign, In: models.ActionInput{Agent: agent.Name}})
		}
		moves = append(moves, models.Move{Act: models.ActStart})
		if err := p.svc.Tasks.Walk(ctx, tx, p.runner, t, moves...); err != nil {
			return nil, err
		}
	case models.TaskInProgress:
		// Sent back by a rejection (no lease), or its runner died (lease expired): the
		// dead runner's unfinished attempt is an infrastructure failure, not the
		// worker's, and does not use up the budget.
		if attempts, err = p.abandonAttempts(ctx, tx, t, prevOwner, now); err != nil {
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
	if attempts == nil && started {
		if attempts, err = tx.ListAttempts(ctx, t.ID); err != nil {
			return nil, err
		}
	}
	tr.attempts = attempts
	if tr.reviewNext, err = reviewFixVerified(ctx, tx, t, attempts); err != nil {
		return nil, err
	}
	tr.task = *t
	if err := p.beginInClaim(ctx, tx, tr, t); err != nil {
		return nil, err
	}
	return tr, nil
}

// beginInClaim prepares the first attempt of a claimed task and records its start in
// the claim's transaction, sparing the attempt a transaction of its own: the attempt
// row exists from the moment the lease does, so a runner that dies before it settles
// leaves a running attempt for the takeover to record as an infrastructure failure. A
// preparation that fails is settled by the task's goroutine, as any other. A task that
// is not ready (see readiness) is blocked right here, t being its locked row: no
// attempt is recorded and nothing runs (tr.blocked). Workspaces that are git worktrees
// are prepared outside the transaction (git may be slow), by the attempt itself.
func (p *claimLoop) beginInClaim(ctx context.Context, tx models.Tx, tr *taskRun, t *models.Task) error {
	if tr.agent.Worktree || triagePending(t) {
		return nil // prepared by the attempt; a pending triage asks before any attempt
	}
	ar := p.starts.newAttempt(tr)
	missing, err := p.starts.prepareReady(ctx, tr, ar, func() (models.ProjectRules, error) { return p.rulesIn(ctx, tx) })
	if err != nil {
		ar.infra("preparing the attempt failed: "+err.Error(), err)
		tr.next = ar
		return nil
	}
	if len(missing) > 0 {
		p.tmpDirs.release(ar.tmp)
		// The blocked task's contract shows the stack criteria whose tools are missing.
		if err := p.fixContract(ctx, tx, t, ar); err != nil {
			return err
		}
		if err := p.svc.Attempts.BlockNotReady(ctx, tx, p.runner, t, missing); err != nil {
			return err
		}
		tr.task, tr.blocked = *t, true
		p.starts.logNotReady(tr, missing)
		return nil
	}
	tr.next = ar
	err = p.starts.recordStart(ctx, tx, tr, ar)
	if errors.Is(err, errBudgetWait) || errors.Is(err, errBudgetSpent) {
		// Not started: the task's goroutine waits for room (its next attempt checks
		// again), or the task was blocked here.
		p.tmpDirs.release(ar.tmp)
		tr.next, tr.blocked = nil, errors.Is(err, errBudgetSpent)
		return nil
	}
	return err
}

// readyTime is when t became ready: its last change, its last dependency's
// verification, a dead runner's lease expiry, or this pool's start, whichever is
// latest.
func (p *claimLoop) readyTime(ctx context.Context, tx models.Tx, t *models.Task) (time.Time, error) {
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
// failures, and returns the task's attempts as they are now.
func (p *claimLoop) abandonAttempts(ctx context.Context, tx models.Tx, t *models.Task, prevOwner string, now time.Time) ([]models.Attempt, error) {
	attempts, err := tx.ListAttempts(ctx, t.ID)
	if err != nil {
		return nil, err
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
			return nil, err
		}
		if err := p.event(ctx, tx, "attempt.finished", t, map[string]any{
			"attempt": a.Number, "outcome": a.Outcome, "stage": a.Stage, "diagnosis": a.Diagnosis, "agent_id": a.AgentID,
		}); err != nil {
			return nil, err
		}
		p.observeAttempt(a.Outcome, a.Stage)
	}
	return attempts, nil
}

// event appends an event about t by the runner in tx.
func (p *common) event(ctx context.Context, tx models.Tx, typ string, t *models.Task, data any) error {
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

func (p *common) observeAttempt(outcome, stage string) {
	if p.cfg.Observer != nil {
		p.cfg.Observer.AttemptFinished(outcome, stage)
	}
}

// UsageObserver is an Observer that also counts what attempts used (the /metrics
// handler is one).
type UsageObserver interface {
	Used(agent string, u *models.Usage)
}

// observeUsage reports a finished attempt's usage to an Observer that counts it.
func (p *common) observeUsage(agent string, u *models.Usage) {
	if o, ok := p.cfg.Observer.(UsageObserver); ok && u != nil {
		o.Used(agent, u)
	}
}
