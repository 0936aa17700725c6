package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/workspace"
)

// BranchPrefix starts the name of every worktree task's own branch: a task works on
// countersign/task-<id>.
const BranchPrefix = "countersign/task-"

// branchFor says which branch a worktree task works on and what it starts from: the
// base recorded by its first attempt, else the verified commit of the newest
// dependency that has one (a workflow step builds on the step before it), else the
// agent's target branch, else the checkout's HEAD (""). It reads the dependencies in
// a transaction of its own: worktree tasks are prepared outside the claim's.
func (p *Pool) branchFor(ctx context.Context, tr *taskRun) (branch, base string, err error) {
	t := &tr.task
	branch = BranchPrefix + strconv.FormatInt(t.ID, 10)
	if t.Base != "" {
		return branch, t.Base, nil
	}
	if len(t.DependsOn) > 0 {
		err = p.inTx(ctx, func(tx models.Tx) error {
			deps, err := tx.GetTasks(ctx, t.DependsOn)
			if err != nil {
				return err
			}
			var newest int64
			for _, d := range deps {
				if d.Commit != "" && d.ID > newest {
					newest, base = d.ID, d.Commit
				}
			}
			return nil
		})
		if err != nil || base != "" {
			return branch, base, err
		}
	}
	return branch, tr.agent.TargetBranch, nil
}

// recordBranch stores, in tx, the branch and base commit the task's worktree was
// prepared with, the first time they are known.
func (p *Pool) recordBranch(ctx context.Context, tx models.Tx, tr *taskRun, ar *attemptRun) error {
	branch, base := ar.ws.Branch(), ar.ws.BaseCommit()
	if branch == "" || (tr.task.Branch == branch && tr.task.Base != "") {
		return nil
	}
	t, err := tx.LockTask(ctx, tr.task.ID)
	if err != nil {
		return err
	}
	t.Branch = branch
	if t.Base == "" {
		t.Base = base
	}
	if err := tx.UpdateTask(ctx, t); err != nil {
		return err
	}
	tr.task.Branch, tr.task.Base = t.Branch, t.Base
	return nil
}

// commitVerified commits what the worker left in its task branch once every check
// passed: the tree the checks ran on, authored by the worker agent, with the task,
// attempt and verifier in trailers. Its id becomes the task's commit and is named on
// the ledger. A commit that cannot be made is the runner's failure.
func (p *Pool) commitVerified(ctx context.Context, tr *taskRun, ar *attemptRun) {
	if ar.ws == nil || ar.ws.Branch() == "" || ar.outcome != models.OutcomePassed {
		return
	}
	t := &tr.task
	commit, err := p.cfg.Workspaces.CommitVerified(ctx, ar.ws, workspace.CommitInfo{
		Author:  workspace.Identity{Name: tr.agent.Name, Email: tr.agent.Name + "@agents.countersign.invalid"},
		Subject: t.Title,
		Trailers: []workspace.Trailer{
			{Key: workspace.TrailerTask, Value: strconv.FormatInt(t.ID, 10)},
			{Key: workspace.TrailerAttempt, Value: strconv.Itoa(ar.num)},
			{Key: workspace.TrailerVerifiedBy, Value: verifiedBy(t)},
		},
	})
	if err != nil {
		ar.infra(fmt.Sprintf("committing the verified work to %s failed: %v", ar.ws.Branch(), err), err)
		return
	}
	ar.commit = commit
}

// verifiedBy names who verifies the task for the commit's trailer: the runner's checks,
// and a person's role when the task's policy leaves the final verification to one.
func verifiedBy(t *models.Task) string {
	if t.Verify == "" || t.Verify == models.PolicyRunner {
		return "runner"
	}
	return "runner, then " + string(t.Verify)
}

// Landing merges verified task branches into their agents' target branches through
// the pool's workspace manager (models.Lander).
type Landing struct {
	workspaces *workspace.Manager
	// FastForward moves the target to the verified commit when it has not moved since
	// the task branched; otherwise (and when false) a merge commit is made.
	FastForward bool
}

// Landing returns the pool's Lander: merges fast-forward when they can.
func (p *Pool) Landing() *Landing { return &Landing{workspaces: p.cfg.Workspaces, FastForward: true} }

// Land merges t's verified commit into agent's target branch (the checkout's current
// branch when the agent names none) and removes the task's worktree; the branch stays.
// A tip that is not the verified tree is ECONFLICT merge_only_verified; a conflict is
// a *models.MergeConflict.
func (l *Landing) Land(ctx context.Context, t *models.Task, agent *models.Agent) (models.Landed, error) {
	if !agent.Worktree || agent.Workdir == "" || t.Branch == "" {
		return models.Landed{}, &models.Error{Code: models.ECONFLICT, Rule: models.RuleMergeOnlyVerified,
			Message: fmt.Sprintf("task %d has no branch of its own to merge: its agent %s works without a git worktree", t.ID, agent.Name)}
	}
	repo, err := filepath.EvalSymlinks(agent.Workdir)
	if err != nil {
		return models.Landed{}, models.Errorf(models.ECONFLICT, "the agent's checkout %s is not usable: %v", agent.Workdir, err)
	}
	target := agent.TargetBranch
	if target == "" {
		if target, err = l.workspaces.DefaultTarget(ctx, repo); err != nil {
			return models.Landed{}, err
		}
	}
	res, err := l.workspaces.Merge(ctx, workspace.MergeRequest{Repo: repo, Target: target, Branch: t.Branch, Verified: t.Commit,
		FastForward: l.FastForward, Subject: fmt.Sprintf("Merge verified task %d: %s", t.ID, t.Title)})
	var nv *workspace.NotVerifiedError
	var ce *workspace.ConflictError
	switch {
	case errors.As(err, &nv):
		return models.Landed{}, &models.Error{Code: models.ECONFLICT, Rule: models.RuleMergeOnlyVerified,
			Message: fmt.Sprintf("%s is not what was verified (%s): a change after verification must be verified again", t.Branch, nv.Error())}
	case errors.As(err, &ce):
		mc := &models.MergeConflict{Target: target}
		var hunks strings.Builder
		for _, f := range ce.Files {
			mc.Files = append(mc.Files, f.Path)
			if f.Hunks != "" {
				fmt.Fprintf(&hunks, "%s:\n%s\n", f.Path, f.Hunks)
			}
		}
		mc.Hunks = hunks.String()
		return models.Landed{}, mc
	case err != nil:
		return models.Landed{}, err
	}
	if err := l.workspaces.Remove(ctx, repo, t.ID, ""); err != nil {
		return models.Landed{}, fmt.Errorf("merged %s into %s, but removing the task's worktree failed: %w", t.Branch, target, err)
	}
	return models.Landed{Target: target, Commit: res.Commit, FastForward: res.FastForward}, nil
}
