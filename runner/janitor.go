package runner

import (
	"context"
	"github.com/countersign/countersign/runner/workspace"
	"log/slog"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/internal/loop"
)

// cleanup removes, at start and every LandingConfig.CleanupEvery, the worktrees of
// tasks that were cancelled or no longer exist, until Stop. Worktrees are on this
// host and cancelling is done by people through any server, so the runner that holds
// them looks rather than being told. (The attempts' spare temp dirs are removed by
// Pool.Start, before any attempt runs.)
type cleanup struct {
	loop.Loop
	cfg   Config
	store models.Store
	log   *slog.Logger
	exec  *executor // the tasks running here, whose worktrees stay
}

// Start cleans at once and then periodically, unless CleanupEvery is negative;
// cancelling ctx does not stop it.
func (p *cleanup) Start(ctx context.Context) error {
	every := p.cfg.Landing.CleanupEvery
	if every < 0 {
		return nil
	}
	return p.Loop.Start(context.WithoutCancel(ctx), every, true, p.cleanWorktrees)
}

// cleanWorktrees removes the worktrees no task needs any more, once.
func (p *cleanup) cleanWorktrees(ctx context.Context) {
	removed, err := p.cfg.Workspaces.Prune(ctx, func(id int64) bool { return p.needsWorktree(ctx, id) })
	if len(removed) > 0 {
		p.log.Info("removed the worktrees of cancelled and vanished tasks", "worktrees", len(removed))
	}
	if err != nil && ctx.Err() == nil {
		p.log.Warn("removing worktrees failed", "err", err)
	}
}

// needsWorktree reports whether task id's worktree must stay: while the task runs
// here, unless it was cancelled or is gone, and whenever that cannot be told.
// A verified task's worktree stays until its merge removes it: people may look at it.
func (p *cleanup) needsWorktree(ctx context.Context, id int64) bool {
	if p.exec.get(id) != nil {
		return true
	}
	t, err := p.store.GetTask(ctx, id)
	switch {
	case models.ErrorCode(err) == models.ENOTFOUND:
		return false
	case err != nil:
		return true
	}
	return t.State != models.TaskCancelled
}

// WorkspaceUsage measures the bytes this pool's task workspaces take on disk (its
// worktrees and fresh task directories).
func (p *Pool) WorkspaceUsage() (int64, error) { return p.cfg.Workspaces.DiskUsage() }

// Workspaces returns the pool's workspace manager: the checkouts verified commits are
// pushed from (the forge sync) and worktrees removed from.
func (p *Pool) Workspaces() *workspace.Manager { return p.cfg.Workspaces }
