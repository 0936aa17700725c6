package forgesync

import (
	"context"
	"fmt"
	"strings"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/forge"
)

// poll reads the pull request and its reviews from the forge and acts on what is new.
func (s *Syncer) poll(ctx context.Context, tg *target) error {
	var pr forge.Pull
	if err := s.call(ctx, func(ctx context.Context) (err error) { pr, err = tg.client.GetPull(ctx, tg.pull.Number); return err }); err != nil {
		return err
	}
	var reviews []forge.Review
	if err := s.call(ctx, func(ctx context.Context) (err error) {
		reviews, err = tg.client.Reviews(ctx, tg.pull.Number)
		return err
	}); err != nil {
		return err
	}
	for i := range reviews {
		if err := s.review(ctx, tg, &reviews[i]); err != nil {
			return err
		}
	}
	switch {
	case pr.Merged:
		return s.merged(ctx, tg, pr.MergeSHA, pr.MergedBy, pr.HeadSHA)
	case !pr.Open:
		return s.closed(ctx, tg, "")
	}
	return s.moved(ctx, tg, pr.HeadSHA)
}

// moved marks a head the pull request's branch moved to, other than the verified
// commit, as failure: Countersign did not verify it. A head already marked is left.
func (s *Syncer) moved(ctx context.Context, tg *target, head string) error {
	p := tg.pull
	// The task's own commit is never foreign: it is the verified one being published.
	if head == "" || head == p.Commit || head == tg.task.Commit || head == p.Moved || p.Number == 0 {
		return nil
	}
	desc := "Not verified by Countersign: the branch moved past verified commit " + short(p.Commit)
	if err := s.setStatus(ctx, tg, head, forge.StateFailure, desc); err != nil {
		return err
	}
	p.Moved = head
	return s.record(ctx, p, "", nil)
}

// merged records a merge in the forge on the task (task.merged, with whether the
// merged head was the verified commit) and removes the task's worktree.
func (s *Syncer) merged(ctx context.Context, tg *target, mergeSHA, by, head string) error {
	p, t := tg.pull, tg.task
	if p.State == models.PullMerged {
		return nil
	}
	p.State, p.MergeSHA = models.PullMerged, mergeSHA
	data := map[string]any{"via": "forge", "forge": tg.forge.Name, "number": p.Number, "url": p.URL, "merge_sha": mergeSHA,
		"merged_by": by, "commit": p.Commit, "head_verified": head == "" || head == p.Commit}
	if err := s.record(ctx, p, models.EventTaskMerged, data); err != nil {
		return err
	}
	if s.cfg.Workspaces != nil && tg.agent != nil && tg.agent.Workdir != "" {
		if err := s.cfg.Workspaces.Remove(ctx, tg.agent.Workdir, t.ID, ""); err != nil {
			s.cfg.Log.Warn("forge sync: removing a merged task's worktree failed", "task_id", t.ID, "err", err)
		}
	}
	return nil
}

// closed records a pull request closed without a merge; the task is left as it is.
func (s *Syncer) closed(ctx context.Context, tg *target, by string) error {
	p := tg.pull
	if p.State != models.PullOpen {
		return nil
	}
	p.State = models.PullClosed
	return s.record(ctx, p, models.EventForgePullClosed, map[string]any{"forge": tg.forge.Name, "number": p.Number, "closed_by": by})
}

// review acts on one review, once (its id is kept on the pull request in the same
// transaction as the action). A review counts only when its author maps to an agent
// that may take the action in Countersign, it is not Countersign's own identity, it
// and — for an approval — it approved the verified commit and its agent is not the
// task's builder: separation of duties holds across the boundary.
func (s *Syncer) review(ctx context.Context, tg *target, r *forge.Review) error {
	return s.inTx(ctx, func(tx models.ForgeTx) error {
		p, err := tx.LockForgePull(ctx, tg.pull.TaskID)
		if err != nil {
			return err
		}
		if p.Seen(r.ID) {
			return nil
		}
		p.MarkSeen(r.ID)
		if err := tx.SaveForgePull(ctx, p); err != nil {
			return err
		}
		tg.pull.Reviews = p.Reviews
		return s.actOnReview(ctx, tx, tg, p, r)
	})
}

func (s *Syncer) actOnReview(ctx context.Context, tx models.ForgeTx, tg *target, p *models.ForgePull, r *forge.Review) error {
	facts := map[string]any{"forge": tg.forge.Name, "number": p.Number, "reviewer": r.Author, "review": string(r.State), "commit": r.CommitSHA}
	ignore := func(why string) error {
		facts["why"] = why
		return s.cfg.Forges.Emit(ctx, tx, models.EventForgeReviewIgnored, models.System, p.TaskID, facts)
	}
	if r.State == forge.ReviewCommented {
		facts["body"] = clip(r.Body)
		return s.cfg.Forges.Emit(ctx, tx, models.EventForgeReview, models.System, p.TaskID, facts)
	}
	if strings.EqualFold(r.Author, tg.login) {
		return ignore("the review is by Countersign's own forge identity")
	}
	if r.State == forge.ReviewApproved && r.CommitSHA != "" && r.CommitSHA != p.Commit {
		// An approval vouches for the commit it saw; a request for changes stands
		// whichever commit it was made on.
		return ignore("the approval is of commit " + short(r.CommitSHA) + ", not the verified commit " + short(p.Commit))
	}
	agent, err := tx.ForgeUserAgent(ctx, tg.forge.ID, r.Author)
	if models.ErrorCode(err) == models.ENOTFOUND {
		return ignore(r.Author + " is not mapped to a Countersign agent")
	} else if err != nil {
		return err
	}
	t, err := tx.LockTask(ctx, p.TaskID)
	if err != nil {
		return err
	}
	act, in, why := reviewAction(t, agent, p, r)
	if act == "" {
		return ignore(why)
	}
	if err := s.cfg.Service.Tasks.Apply(ctx, tx, agent, t, act, in); err != nil {
		if models.ErrorCode(err) == models.EINTERNAL || models.ErrorCode(err) == "" {
			return err
		}
		return ignore(models.ErrorMessage(err))
	}
	facts["agent"], facts["action"] = agent.Name, string(act)
	return s.cfg.Forges.Emit(ctx, tx, models.EventForgeReview, agent, p.TaskID, facts)
}

// reviewAction is the task action a review amounts to, or "" and why none: changes
// requested reopen a verified task (reject a completed one's verification) with the
// reviewer's words as the reason the next attempt's brief carries; an approval
// verifies a task that waits for a person's verification.
func reviewAction(t *models.Task, agent *models.Agent, p *models.ForgePull, r *forge.Review) (models.Action, models.ActionInput, string) {
	switch r.State {
	case forge.ReviewChangesRequested:
		reason := fmt.Sprintf("Changes requested by %s on pull request %s:\n\n%s", r.Author, p.URL, clip(r.Body))
		switch t.State {
		case models.TaskVerified:
			return models.ActReopen, models.ActionInput{Reason: reason}, ""
		case models.TaskCompleted:
			return models.ActRejectVerification, models.ActionInput{Reason: reason}, ""
		}
		return "", models.ActionInput{}, "the task is " + string(t.State)
	case forge.ReviewApproved:
		if t.BuilderID != nil && agent.ID == *t.BuilderID {
			return "", models.ActionInput{}, "an approval by the task's builder (" + agent.Name + ") does not count"
		}
		if t.State != models.TaskCompleted {
			return "", models.ActionInput{}, "the task is " + string(t.State) + ": nothing waits for an approval"
		}
		return models.ActVerify, models.ActionInput{Notes: fmt.Sprintf("Approved by %s on pull request %s", r.Author, p.URL)}, ""
	}
	return "", models.ActionInput{}, "a review that is neither an approval nor a request for changes"
}

// clip bounds a reviewer's words kept in an event or a reason.
func clip(s string) string {
	const max = 8000
	if len(s) > max {
		return s[:max] + "\n[…]"
	}
	return s
}
