package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/checks"
	"github.com/countersign/countersign/runner/internal/loop"
	"github.com/countersign/countersign/runner/judge"
	"github.com/countersign/countersign/runner/worker"
)

// rechecker runs goals' deferred checks (models.DeferredChecks) until Stop: at start
// and every Poll it looks for goals waiting for verification whose checks are
// pending, or whose runner has not finished them in models.DeferredStale, claims each
// and runs it. Like the cleanup it looks rather than being told: a goal reaches
// pending_verify in whatever transaction verifies its last task.
type rechecker struct {
	loop.Loop
	*common
	conf    *confiner // confines the checks as judged runs are
	judging *judging  // the judge's environment the checks run in
}

// Start runs the deferred checks at once and every Poll; cancelling ctx does not stop
// it.
func (p *rechecker) Start(ctx context.Context) error {
	return p.Loop.Start(context.WithoutCancel(ctx), p.cfg.Poll, true, p.runDeferredOnce)
}

// runDeferredOnce claims and runs every deferred run waiting now.
func (p *rechecker) runDeferredOnce(ctx context.Context) {
	goals, err := p.store.ListGoals(ctx, models.GoalFilter{State: models.GoalPendingVerify, Limit: 100})
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("listing goals for their deferred checks failed", "err", err)
		}
		return
	}
	for _, g := range goals {
		d := g.Deferred
		if d == nil || (d.Status != models.DeferredPending && d.Status != models.DeferredRunning) {
			continue
		}
		claimed, ok, err := p.svc.Goals.ClaimDeferred(ctx, p.runner, g.ID, p.cfg.RunnerID)
		if err != nil || !ok {
			if err != nil && ctx.Err() == nil {
				p.log.Warn("claiming a goal's deferred checks failed", "goal_id", g.ID, "err", err)
			}
			continue
		}
		results, diagnosis, output := p.runDeferred(ctx, claimed)
		if ctx.Err() != nil {
			return // stopping: the run stays claimed until DeferredStale, then runs again
		}
		rec, err := p.svc.Goals.RecordDeferred(ctx, p.runner, g.ID, p.cfg.RunnerID, results, diagnosis, output)
		if err != nil {
			p.log.Warn("recording a goal's deferred checks failed", "goal_id", g.ID, "err", err)
			continue
		}
		if rec.Deferred != nil {
			p.log.Info("deferred checks ran", "goal_id", g.ID, "status", rec.Deferred.Status, "criteria", len(rec.Deferred.Criteria))
		}
	}
}

// deferredVerifyTimeout bounds each deferred criterion's command. The deferred
// checks run a goal's integrated work, gathered from several tasks' contracts, so no
// one contract's verify_timeout governs them: they keep the bound they always had.
const deferredVerifyTimeout = 10 * time.Minute

// runDeferred runs g's deferred criteria in its final workspace — that of the task
// verified last, which in a workflow holds every earlier step's work — confined as
// verify commands are, with the project rules' activity commands. It returns the
// criteria's results, and on failure a diagnosis and the failing commands' output.
func (p *rechecker) runDeferred(ctx context.Context, g *models.Goal) ([]models.CriterionResult, string, string) {
	dir, err := p.finalWorkspace(ctx, g.ID)
	if err != nil {
		return nil, "the goal's final workspace: " + err.Error(), ""
	}
	rules, err := p.rules(ctx)
	if err != nil {
		return nil, "reading the project rules failed: " + err.Error(), ""
	}
	crit := make([]contract.Criterion, len(g.Deferred.Criteria))
	for i, c := range g.Deferred.Criteria {
		crit[i] = c.Criterion
	}
	je, err := p.judging.newJudgeEnv(dir, rules.Stacks, nil)
	if err != nil {
		return nil, "preparing the judge's environment for the checks failed: " + err.Error(), ""
	}
	defer func() {
		if err := je.Close(); err != nil {
			p.log.Warn("removing a judged run's environment failed", "dir", je.Run, "err", err)
		}
	}()
	req := checks.VerifyRequest{Dir: dir, Criteria: crit, ActivityCommands: rules.Activities, Env: je.Vars(),
		Confine: p.deferredConfinement(je, dir), ResultsDir: je.Tmp, Timeout: deferredVerifyTimeout}
	res, results, _ := checks.VerifyWith(ctx, req)
	if res.Verdict == models.VerdictPass {
		return results, "", ""
	}
	var output []string
	for _, r := range results {
		if r.Status != models.VerdictPass && r.Error != "" {
			output = append(output, fmt.Sprintf("%s (%s):\n%s", r.Activity, r.Command, r.Error))
		}
	}
	return results, res.Diagnosis, strings.Join(output, "\n\n")
}

// finalWorkspace is the workspace of the goal's task verified last among those the
// runner fingerprinted, while it exists.
func (p *rechecker) finalWorkspace(ctx context.Context, goalID int64) (string, error) {
	tasks, err := p.store.ListTasks(ctx, models.TaskFilter{GoalID: goalID, State: models.TaskVerified, Limit: 500})
	if err != nil {
		return "", err
	}
	var last *models.Task
	for i := range tasks {
		t := &tasks[i]
		if t.Fingerprint == nil || t.VerifiedAt == nil {
			continue
		}
		if last == nil || t.VerifiedAt.After(*last.VerifiedAt) {
			last = t
		}
	}
	if last == nil {
		return "", fmt.Errorf("no verified task of the goal has a workspace the runner knows")
	}
	dir := last.Fingerprint.Dir
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("task %d's workspace is gone (pruned or merged)", last.ID)
	}
	return filepath.Clean(dir), nil
}

// deferredConfinement confines the deferred checks as a judged run is
// (judgeConfinement): dir and the run's own places writable, no agent's home.
func (p *rechecker) deferredConfinement(je *judge.Env, dir string) *worker.Confinement {
	if p.cfg.Sandbox == nil || !p.cfg.Sandbox.Enabled() {
		return nil
	}
	return p.conf.judgeConfinement(je, dir, nil, nil)
}
