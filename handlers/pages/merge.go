package pages

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/pages/task"
)

// branchView reports where task t's work stands in its repository, for the task page:
// nil for a task without a branch or a server without the runner. A branch that cannot
// be read is shown as such; the reason goes to the log, not the page.
func (p *Pages) branchView(ctx context.Context, me *models.Agent, t *models.Task) *task.Branch {
	if t.Branch == "" || p.d.Lander == nil {
		return nil
	}
	b := &task.Branch{Name: t.Branch, Base: t.Base, Commit: t.Commit}
	r, err := p.svc.Merges.BranchReport(ctx, t, p.d.Lander)
	if err != nil {
		p.d.Log.Warn("reading a task's branch failed", "task_id", t.ID, "err", err)
		b.Unreadable = true
		return b
	}
	b.Target, b.Ahead, b.Behind, b.TipVerified, b.Merged, b.Gone = r.Target, r.Ahead, r.Behind, r.TipVerified, r.Merged, r.Gone
	b.Diff, b.DiffTruncated = r.Diff, r.DiffTruncated
	b.CanMerge = me.HasRole(models.RoleLead) && t.State == models.TaskVerified && t.Commit != "" && !r.Merged && !r.Gone
	return b
}

// taskMerge answers POST /tasks/:id/merge: a lead lands the task's verified commit.
// A refusal (not what was verified, a conflict and its fix task) comes back to the
// task page as an error message.
func (p *Pages) taskMerge(c echo.Context) error {
	id, err := handlers.PathID(c, "id")
	if err != nil {
		return err
	}
	back := "/tasks/" + itoa(id)
	l, err := p.svc.Merges.MergeTask(c.Request().Context(), SignedIn(c), id, p.d.Lander)
	if models.ErrorCode(err) == models.ECONFLICT {
		return fail(c, back, err)
	}
	if err != nil {
		return err
	}
	return done(c, back, fmt.Sprintf("Task #%d merged into %s: %s", id, l.Target, landedText(*l)))
}

// goalMerge answers POST /goals/:id/merge: a lead lands a verified goal's commits.
func (p *Pages) goalMerge(c echo.Context) error {
	id, err := handlers.PathID(c, "id")
	if err != nil {
		return err
	}
	back := "/goals/" + itoa(id)
	landed, err := p.svc.Merges.MergeGoal(c.Request().Context(), SignedIn(c), id, p.d.Lander)
	if models.ErrorCode(err) == models.ECONFLICT {
		return fail(c, back, err)
	}
	if err != nil {
		return err
	}
	return done(c, back, fmt.Sprintf("Merged the verified work of %d task(s); %s is now at %s.", len(landed), landed[len(landed)-1].Target, short(landed[len(landed)-1].Commit)))
}

// fail answers a refused form POST whose refusal the person must read where they
// were: flash the error's message (never an internal error's) and redirect to to.
func fail(c echo.Context, to string, err error) error {
	setFlash(c, components.FlashError, models.ErrorMessage(err))
	return c.Redirect(303, safeNext(to))
}

// landedText says how a merge landed.
func landedText(l models.Landed) string {
	s := "merge commit " + short(l.Commit)
	switch {
	case l.UpToDate:
		s = "it was already there"
	case l.FastForward:
		s = "fast-forwarded to " + short(l.Commit)
	}
	if l.BranchDeleted {
		s += "; the task's branch was deleted"
	}
	if l.Pushed != "" {
		s += "; pushed to " + l.Pushed
	}
	if l.PushError != "" {
		s += "; pushing failed: " + l.PushError
	}
	return s + "."
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// usageCache keeps the workspaces' disk usage for a while: walking every worktree
// on each agents page load would cost more than the figure is worth.
type usageCache struct {
	mu    sync.Mutex
	at    time.Time
	bytes int64
	ok    bool
}

// usageTTL is how long a measured disk usage is shown before it is measured again.
const usageTTL = 30 * time.Second

// get returns the cached figure, measuring with fn when it is older than usageTTL.
func (u *usageCache) get(fn func() (int64, error)) (int64, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if fn == nil {
		return 0, false
	}
	if time.Since(u.at) > usageTTL {
		n, err := fn()
		u.at, u.bytes, u.ok = time.Now(), n, err == nil
	}
	return u.bytes, u.ok
}
