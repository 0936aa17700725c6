package runner

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/triage"
)

// triageTimeout bounds one triage call, retries included.
const triageTimeout = 3 * time.Minute

// triagePending reports whether t's attempts ran out and the triage has not answered
// yet.
func triagePending(t *models.Task) bool {
	return t.Triage != nil && t.Triage.Status == models.TriagePending
}

// triageApproach is the new approach of the one extra attempt a triage gave t when
// the attempt about to start is that attempt (the triage said retry, and no attempt
// since was a triage attempt); "" otherwise.
func triageApproach(t *models.Task, attempts []models.Attempt) string {
	if t.Triage == nil || t.Triage.Status != models.TriageRetry {
		return ""
	}
	if slices.ContainsFunc(attempts, func(a models.Attempt) bool { return a.Triage }) {
		return ""
	}
	return t.Triage.Approach
}

// triage asks the triage about tr's task, whose attempts ran out on a work failure,
// and records its decision in one transaction: a retry gives the task exactly one more
// attempt with the approach in its brief; an escalation — or no usable answer, fail
// safe — blocks it with the triage's summary and recommendation (or its error) in the
// inbox item. What the call spent is added to the task's last attempt, so that it
// counts against the budgets. A task is triaged once: its decision stays on it.
func (p *settler) triage(ctx context.Context, tr *taskRun) decision {
	req := p.triageRequest(tr)
	tctx, cancel := context.WithTimeout(ctx, triageTimeout)
	dec, askErr := p.cfg.Triage.Triage(tctx, req)
	cancel()
	if ctx.Err() != nil {
		// Stopping, or the lease was lost: the triage stays pending for whoever runs
		// the task next.
		if !errors.Is(context.Cause(ctx), ErrLeaseLost) {
			p.releaseLease(tr)
		}
		return decision{done: true}
	}
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer scancel()
	var d decision
	err := p.inTx(sctx, func(tx models.Tx) error {
		buf := models.BufferEvents(tx)
		var err error
		if d, err = p.recordTriage(sctx, buf, tr, dec, askErr); err != nil {
			return err
		}
		return buf.Flush(sctx)
	})
	if err != nil {
		p.log.Error("recording the triage failed; releasing the task", "task_id", tr.task.ID, "err", err)
		p.releaseLease(tr)
		return decision{done: true}
	}
	p.log.Info("task triaged", "task_id", tr.task.ID, "status", tr.task.Triage.Status)
	return d
}

// triageRequest is what the triage reads: the task, its contract in words, and the
// round's failures with their output tails.
func (p *settler) triageRequest(tr *taskRun) triage.Request {
	t := &tr.task
	req := triage.Request{TaskID: t.ID, Title: t.Title, Brief: t.Brief, Role: t.Role,
		Contract: contract.RenderContract(t.Contract, t.ID), Tails: map[int]string{},
		Attempts: roundAttempts(tr.attempts, max(t.AttemptsUsed, 1), false)}
	for _, a := range tr.attempts {
		if a.OutputTail != "" {
			req.Tails[a.Number] = a.OutputTail
		}
	}
	return req
}

// recordTriage writes the decision in tx (see triage).
func (p *settler) recordTriage(ctx context.Context, tx models.Tx, tr *taskRun, dec triage.Decision, askErr error) (decision, error) {
	t, err := tx.LockTask(ctx, tr.task.ID)
	if err != nil {
		return decision{}, err
	}
	if t.State != models.TaskInProgress || t.LeaseOwner != p.cfg.RunnerID || !triagePending(t) {
		tr.task = *t
		return decision{done: true}, nil // cancelled or taken over meanwhile
	}
	tri := &models.Triage{At: time.Now().UTC(), Usage: dec.Usage}
	switch {
	case askErr != nil:
		tri.Status, tri.Error = models.TriageFailed, contract.Truncate(askErr.Error(), 2000)
	case dec.Action == models.TriageRetry:
		tri.Status, tri.Approach = models.TriageRetry, dec.Approach
	default:
		tri.Status, tri.Summary, tri.Recommend, tri.Role, tri.Guidance = models.TriageEscalate, dec.Summary, dec.Recommend, dec.Role, dec.Guidance
	}
	t.Triage = tri
	if err := p.chargeTriage(ctx, tx, t, tri.Usage); err != nil {
		return decision{}, err
	}
	if err := p.event(ctx, tx, "task.triaged", t, map[string]any{"status": tri.Status, "approach": tri.Approach,
		"summary": tri.Summary, "recommend": tri.Recommend, "error": tri.Error}); err != nil {
		return decision{}, err
	}
	var d decision
	if tri.Status == models.TriageRetry {
		// Exactly one more attempt: the budget's last.
		t.AttemptsUsed = attemptBudget(t) - 1
		err = p.keepLease(ctx, tx, t)
	} else {
		d.done = true
		err = p.block(ctx, tx, t, false)
	}
	tr.task = *t
	return d, err
}

// chargeTriage adds what the triage spent to the task's last attempt, priced like
// the attempt's own usage, so that the task's, goal's and agent's budgets count it.
func (p *settler) chargeTriage(ctx context.Context, tx models.Tx, t *models.Task, u *models.Usage) error {
	if u == nil {
		return nil
	}
	attempts, err := tx.ListAttempts(ctx, t.ID)
	if err != nil || len(attempts) == 0 {
		return err
	}
	last := &attempts[len(attempts)-1]
	rules, err := p.rulesIn(ctx, tx)
	if err != nil {
		return err
	}
	charged := *u
	charged.PriceWith(prices(rules))
	last.Usage.PriceWith(prices(rules))
	last.Usage = last.Usage.Add(&charged)
	last.Usage.AddNote("includes the triage's call (" + charged.Model + ")")
	return tx.UpdateAttempt(ctx, last)
}
