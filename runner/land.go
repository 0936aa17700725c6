package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/workspace"
)

// DefaultBranchPrefix starts the name of every worktree task's own branch unless
// LandingConfig.BranchPrefix says otherwise: a task works on countersign/task-<id>.
const DefaultBranchPrefix = "countersign/task-"

// DefaultCleanupEvery is how often the pool removes the worktrees of cancelled and
// vanished tasks when LandingConfig.CleanupEvery is zero.
const DefaultCleanupEvery = time.Minute

// LandingConfig says where verified work goes: the task branches' names, how a merge
// lands, what is pushed and what is cleaned.
type LandingConfig struct {
	// BranchPrefix starts every task branch's name (DefaultBranchPrefix when empty); a
	// task's branch is the prefix and its id, and must be a valid branch name in a
	// directory of its own ("team/cs-"), the one directory of refs workers may write.
	BranchPrefix string
	// MergeCommit makes every merge a merge commit, even when the target could be
	// fast-forwarded to the verified commit, so the target's history shows each task
	// landing. False fast-forwards when it can.
	MergeCommit bool
	// DeleteMerged deletes a task's branch once its verified commit has landed.
	DeleteMerged bool
	// PushRemote, when set, names a remote of the agents' checkouts: each verified task
	// branch is pushed there when it is committed, and each target after a merge, so a
	// team's own pull-request flow takes over. A push that fails is logged and recorded
	// as a branch.push_failed event; it never undoes a verification or a merge.
	PushRemote string
	// CleanupEvery is how often the pool removes the worktrees of cancelled tasks and
	// of tasks that are gone (DefaultCleanupEvery when zero; negative: never).
	CleanupEvery time.Duration
}

// EventBranchPushFailed records a verified branch or a merged target that could not be
// pushed to LandingConfig.PushRemote.
const EventBranchPushFailed = "branch.push_failed"

func (c *LandingConfig) defaults() error {
	if c.BranchPrefix == "" {
		c.BranchPrefix = DefaultBranchPrefix
	}
	if err := workspace.ValidBranch(c.BranchPrefix + "1"); err != nil {
		return fmt.Errorf("runner: branch prefix %q does not make branch names: %w", c.BranchPrefix, err)
	}
	if !strings.Contains(c.BranchPrefix, "/") {
		// A worker may write refs only in its branch's directory; at the top of
		// refs/heads that would be every branch, the target too.
		return fmt.Errorf("runner: branch prefix %q must name a directory of its own (like countersign/task-)", c.BranchPrefix)
	}
	if c.PushRemote != "" && !workspace.ValidRemote(c.PushRemote) {
		return fmt.Errorf("runner: push remote %q is not a remote's name", c.PushRemote)
	}
	if c.CleanupEvery == 0 {
		c.CleanupEvery = DefaultCleanupEvery
	}
	return nil
}

// branchFor says which branch a worktree task works on and what it starts from: the
// base recorded by its first attempt; else what its dependencies verified — one
// dependency's commit (a workflow step builds on the step before it), or for steps
// that ran side by side a commit holding all of theirs (their merge; a conflict is a
// *stepConflictError); else the agent's target branch, else the checkout's HEAD ("").
// It reads the dependencies in a transaction of its own: worktree tasks are prepared
// outside the claim's.
func (p *lander) branchFor(ctx context.Context, tr *taskRun) (branch, base string, err error) {
	t := &tr.task
	branch = p.cfg.Landing.BranchPrefix + strconv.FormatInt(t.ID, 10)
	if t.Base != "" {
		return branch, t.Base, nil
	}
	var deps []models.Task
	if len(t.DependsOn) > 0 {
		err = p.inTx(ctx, func(tx models.Tx) error {
			deps, err = tx.GetTasks(ctx, t.DependsOn)
			return err
		})
		if err != nil {
			return branch, "", err
		}
	}
	slices.SortFunc(deps, func(a, b models.Task) int { return cmp.Compare(a.ID, b.ID) })
	var ids []int64
	var commits []string
	for _, d := range deps {
		if d.Commit != "" {
			ids, commits = append(ids, d.ID), append(commits, d.Commit)
		}
	}
	switch len(commits) {
	case 0:
		return branch, tr.agent.TargetBranch, nil
	case 1:
		return branch, commits[0], nil
	}
	base, err = p.cfg.Workspaces.Combine(ctx, tr.agent.Workdir, commits, fmt.Sprintf("Combine the verified work of tasks %v for task %d", ids, t.ID))
	var ce *workspace.ConflictError
	if errors.As(err, &ce) {
		c := mergeConflict("", ce)
		return branch, "", &stepConflictError{models.StepConflict{Deps: ids, Base: commits[0], Merge: commits[1:], Files: c.Files, Hunks: c.Hunks}}
	}
	return branch, base, err
}

// stepConflictError is a task whose dependencies' verified commits conflict: it cannot
// start until a fix task has merged them.
type stepConflictError struct{ c models.StepConflict }

func (e *stepConflictError) Error() string {
	return fmt.Sprintf("the verified work of tasks %v conflicts in %s", e.c.Deps, strings.Join(e.c.Files, ", "))
}

// recordBranch stores, in tx, the branch and base commit the task's worktree was
// prepared with, the first time they are known.
func (p *lander) recordBranch(ctx context.Context, tx models.Tx, tr *taskRun, ar *attemptRun) error {
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
func (p *lander) commitVerified(ctx context.Context, tr *taskRun, ar *attemptRun) {
	if ar.ws == nil || ar.ws.Branch() == "" || ar.outcome != models.OutcomePassed {
		return
	}
	t := &tr.task
	// The tree the checks judged, never the worktree as it is now: the candidate's
	// objects go into the repository first.
	cand, tree := landedTree(ar)
	if tree == "" {
		ar.infra("the attempt has no candidate snapshot: there is nothing judged to land", nil)
		return
	}
	if err := p.judgeStore.Export(ctx, ar.ws.Repo(), cand); err != nil {
		ar.infra(fmt.Sprintf("bringing the judged tree into %s failed: %v", ar.ws.Repo(), err), err)
		return
	}
	commit, err := p.cfg.Workspaces.CommitVerified(ctx, ar.ws, workspace.CommitInfo{
		Tree:    tree,
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

// committed says the attempt passed with a commit and the settle recorded that commit
// on the task: what the note and the push may then carry.
func committed(tr *taskRun, ar *attemptRun) bool {
	return ar.commit != "" && ar.outcome == models.OutcomePassed && tr.task.Commit == ar.commit
}

// noteVerified attaches the attestation of a commit just verified to it as a git note
// (workspace.NotesRef), so that it travels with the commit. A note that cannot be
// written is logged: the attestation stays in the ledger entry and the API.
func (p *lander) noteVerified(ctx context.Context, tr *taskRun, ar *attemptRun) {
	if !committed(tr, ar) || tr.task.State != models.TaskVerified {
		return
	}
	e, _, err := p.svc.Ledger.TaskAttestation(ctx, tr.task.ID)
	if models.ErrorCode(err) == models.ENOTFOUND {
		return // no signing key, or nothing to attest
	}
	if err == nil {
		err = p.cfg.Workspaces.AddNote(ctx, ar.ws.Repo(), ar.commit, e.Attestation)
		ar.noted = err == nil
	}
	if err != nil {
		p.log.Warn("attaching the attestation to the verified commit failed", "task_id", tr.task.ID, "commit", ar.commit, "err", err)
	}
}

// pushVerified pushes a task branch whose verified commit was just recorded to
// LandingConfig.PushRemote. A push that fails is logged and recorded as an event: the
// verification stands, and the branch can be pushed by hand.
func (p *lander) pushVerified(ctx context.Context, tr *taskRun, ar *attemptRun) {
	remote := p.cfg.Landing.PushRemote
	if remote == "" || !committed(tr, ar) {
		return
	}
	err := p.cfg.Workspaces.Push(ctx, ar.ws.Repo(), remote, ar.ws.Branch())
	if err == nil && ar.noted {
		err = p.cfg.Workspaces.Push(ctx, ar.ws.Repo(), remote, workspace.NotesRef)
	}
	if err == nil {
		return
	}
	p.log.Warn("pushing a verified task branch failed", "task_id", tr.task.ID, "branch", ar.ws.Branch(), "remote", remote, "err", err)
	data := map[string]any{"branch": ar.ws.Branch(), "remote": remote, "error": contract.Truncate(err.Error(), 2000)}
	if err := p.inTx(ctx, func(tx models.Tx) error { return p.event(ctx, tx, EventBranchPushFailed, &tr.task, data) }); err != nil {
		p.log.Error("recording a failed push failed", "task_id", tr.task.ID, "err", err)
	}
}

// Landing merges verified task branches into their agents' target branches through
// the pool's workspace manager (models.Lander), as the pool's LandingConfig says.
type Landing struct {
	workspaces *workspace.Manager
	cfg        LandingConfig
}

// Landing returns the pool's Lander.
func (p *Pool) Landing() *Landing { return NewLanding(p.cfg.Workspaces, p.cfg.Landing) }

// NewLanding returns a Lander over the task branches ws prepared, as cfg says; a
// server without a pool of its own can merge what a runner on the same host verified.
func NewLanding(ws *workspace.Manager, cfg LandingConfig) *Landing {
	return &Landing{workspaces: ws, cfg: cfg}
}

// diffLimit bounds the diff a branch report carries.
const diffLimit = 256 << 10

// Inspect reports on t's branch against its agent's target: the commits it is ahead
// and behind, whether its tip is still the verified tree, and its diff from the base.
// A task without a branch of its own reports nothing (a zero report, no error).
func (l *Landing) Inspect(ctx context.Context, t *models.Task, agent *models.Agent) (models.BranchReport, error) {
	r := models.BranchReport{Branch: t.Branch, Base: t.Base, Commit: t.Commit}
	if t.Branch == "" || !agent.Worktree || agent.Workdir == "" {
		return models.BranchReport{}, nil
	}
	repo, target, err := l.target(ctx, agent)
	if err != nil {
		return r, err
	}
	r.Target = target
	tip, err := l.workspaces.TreeOf(ctx, repo, t.Branch)
	if models.ErrorCode(err) == models.ENOTFOUND {
		r.Gone = true // deleted after its merge, or by hand
		return r, nil
	}
	if err != nil {
		return r, err
	}
	if t.Commit != "" {
		verified, err := l.workspaces.TreeOf(ctx, repo, t.Commit)
		r.TipVerified = err == nil && verified == tip
	}
	if r.Ahead, r.Behind, err = l.workspaces.Compare(ctx, repo, target, t.Branch); err != nil {
		return r, err
	}
	r.Merged = r.Ahead == 0 && t.Commit != "" && r.TipVerified
	if t.Base != "" {
		if r.Diff, r.DiffTruncated, err = l.workspaces.Diff(ctx, repo, t.Base, t.Branch, diffLimit); err != nil {
			return r, err
		}
	}
	return r, nil
}

// target resolves agent's checkout and the branch its work lands on: the agent's
// target branch, else the checkout's current branch.
func (l *Landing) target(ctx context.Context, agent *models.Agent) (repo, target string, err error) {
	repo, err = filepath.EvalSymlinks(agent.Workdir)
	if err != nil {
		return "", "", models.Errorf(models.ECONFLICT, "the agent's checkout %s is not usable: %v", agent.Workdir, err)
	}
	target = agent.TargetBranch
	if target == "" {
		target, err = l.workspaces.DefaultTarget(ctx, repo)
	}
	return repo, target, err
}

// Land merges t's verified commit into agent's target branch (the checkout's current
// branch when the agent names none), removes the task's worktree, deletes its branch
// when the config says so, and pushes the target when there is a push remote. A tip
// that is not the verified tree is ECONFLICT merge_only_verified; a conflict is a
// *models.MergeConflict.
func (l *Landing) Land(ctx context.Context, t *models.Task, agent *models.Agent) (models.Landed, error) {
	if !agent.Worktree || agent.Workdir == "" || t.Branch == "" {
		return models.Landed{}, &models.Error{Code: models.ECONFLICT, Rule: models.RuleMergeOnlyVerified,
			Message: fmt.Sprintf("task %d has no branch of its own to merge: its agent %s works without a git worktree", t.ID, agent.Name)}
	}
	repo, target, err := l.target(ctx, agent)
	if err != nil {
		return models.Landed{}, err
	}
	res, err := l.workspaces.Merge(ctx, workspace.MergeRequest{Repo: repo, Target: target, Branch: t.Branch, Verified: t.Commit,
		FastForward: !l.cfg.MergeCommit, Subject: fmt.Sprintf("Merge verified task %d: %s", t.ID, t.Title)})
	var nv *workspace.NotVerifiedError
	var ce *workspace.ConflictError
	switch {
	case errors.As(err, &nv):
		return models.Landed{}, &models.Error{Code: models.ECONFLICT, Rule: models.RuleMergeOnlyVerified,
			Message: fmt.Sprintf("%s is not what was verified (%s): a change after verification must be verified again", t.Branch, nv.Error())}
	case errors.As(err, &ce):
		return models.Landed{}, mergeConflict(target, ce)
	case err != nil:
		return models.Landed{}, err
	}
	landed := models.Landed{Target: target, Commit: res.Commit, FastForward: res.FastForward, UpToDate: res.UpToDate}
	branch := ""
	if l.cfg.DeleteMerged {
		branch, landed.BranchDeleted = t.Branch, true
	}
	if err := l.workspaces.Remove(ctx, repo, t.ID, branch); err != nil {
		return landed, fmt.Errorf("merged %s into %s, but removing the task's worktree failed: %w", t.Branch, target, err)
	}
	if l.cfg.PushRemote != "" {
		if err := l.workspaces.Push(ctx, repo, l.cfg.PushRemote, target); err != nil {
			landed.PushError = contract.Truncate(err.Error(), 2000)
		} else {
			landed.Pushed = l.cfg.PushRemote
		}
	}
	return landed, nil
}

// mergeConflict carries a workspace conflict to the governance service.
func mergeConflict(target string, ce *workspace.ConflictError) *models.MergeConflict {
	mc := &models.MergeConflict{Target: target}
	var hunks strings.Builder
	for _, f := range ce.Files {
		mc.Files = append(mc.Files, f.Path)
		if f.Hunks != "" {
			fmt.Fprintf(&hunks, "%s:\n%s\n", f.Path, f.Hunks)
		}
	}
	mc.Hunks = hunks.String()
	return mc
}
