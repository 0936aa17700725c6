package pages

import (
	"context"
	"fmt"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/drift"
	"github.com/countersign/countersign/web/pages/task"
)

// mayRecheck says whether me may recheck verified work: leads and execs, who act on
// what a recheck finds.
func mayRecheck(me *models.Agent) bool {
	return me.HasRole(models.RoleLead) || me.HasRole(models.RoleExec)
}

// taskRecheck answers POST /tasks/:id/recheck: a lead or exec compares the verified
// task's work with its fingerprint; the finding comes back as a flash.
func (p *Pages) taskRecheck(c echo.Context) error {
	id, err := handlers.PathID(c, "id")
	if err != nil {
		return err
	}
	if err := p.requireRecheck(c); err != nil {
		return err
	}
	res, err := p.d.Recheck.Task(c.Request().Context(), SignedIn(c), id)
	if err != nil {
		return err
	}
	return done(c, "/tasks/"+itoa(id), recheckText([]drift.Result{res}))
}

// goalRecheck answers POST /goals/:id/recheck: every verified task of the goal.
func (p *Pages) goalRecheck(c echo.Context) error {
	id, err := handlers.PathID(c, "id")
	if err != nil {
		return err
	}
	if err := p.requireRecheck(c); err != nil {
		return err
	}
	if _, err := p.svc.Store().GetGoal(c.Request().Context(), id); err != nil {
		return err
	}
	results, err := p.d.Recheck.Tasks(c.Request().Context(), SignedIn(c), id)
	if err != nil {
		return err
	}
	return done(c, "/goals/"+itoa(id), recheckText(results))
}

func (p *Pages) requireRecheck(c echo.Context) error {
	if !mayRecheck(SignedIn(c)) {
		return models.Forbidden("lead_or_exec", "only a lead or an exec rechecks verified work")
	}
	if p.d.Recheck == nil {
		return models.Errorf(models.ECONFLICT, "this server does not run the runner, which rechecks work")
	}
	return nil
}

// recheckText says what a recheck found, in one sentence a flash can hold.
func recheckText(results []drift.Result) string {
	var stale, fine, other []string
	for _, r := range results {
		switch {
		case len(r.Changed) > 0:
			stale = append(stale, r.String())
		case r.Unchecked || r.Gone:
			other = append(other, r.String())
		default:
			fine = append(fine, fmt.Sprintf("#%d", r.TaskID))
		}
	}
	var parts []string
	if len(stale) > 0 {
		parts = append(parts, strings.Join(stale, "; "))
	}
	if len(fine) > 0 {
		parts = append(parts, "as verified: "+strings.Join(fine, ", "))
	}
	if len(other) > 0 {
		parts = append(parts, strings.Join(other, "; "))
	}
	if len(parts) == 0 {
		return "No verified task to recheck."
	}
	return "Recheck: " + strings.Join(parts, ". ") + "."
}

// verificationView is the task page's verification card: the kind of the task's
// standing task.complete, its fingerprint and drift; nil for a task that has neither
// a completion on the ledger nor a fingerprint.
func (p *Pages) verificationView(ctx context.Context, me *models.Agent, t *models.Task) (*task.Verification, error) {
	standing, err := p.svc.Ledger.StandingCompletion(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	if standing == nil && t.Fingerprint == nil {
		return nil, nil
	}
	v := &task.Verification{}
	if standing != nil {
		v.Kind, v.Attestation = standing.Kind, len(standing.Attestation) > 0
	}
	if t.Fingerprint != nil {
		v.Fingerprinted = len(t.Fingerprint.Files)
	}
	if t.Drift != nil {
		v.Stale, v.Changed = true, t.Drift.Summary()
	}
	v.CanRecheck = p.d.Recheck != nil && mayRecheck(me) && t.State == models.TaskVerified && t.Fingerprint != nil
	return v, nil
}
