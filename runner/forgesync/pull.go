package forgesync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/forge"
	"github.com/countersign/countersign/runner/workspace"
)

// target is one task's pull request with what it takes to act on it.
type target struct {
	task   *models.Task
	agent  *models.Agent // the builder, whose checkout holds the branch
	forge  *models.Forge
	client forge.Client
	login  string // the identity the token acts as
	pull   *models.ForgePull
}

// load reads the task, its builder, the builder's forge and that forge's client.
func (s *Syncer) load(ctx context.Context, taskID int64, p *models.ForgePull) (*target, error) {
	t, err := s.store.GetTask(ctx, taskID)
	if err != nil {
		return nil, err
	}
	tg := &target{task: t, pull: p}
	if t.BuilderID != nil {
		if tg.agent, err = s.store.GetAgent(ctx, *t.BuilderID); err != nil {
			return nil, err
		}
	}
	switch {
	case p != nil:
		tg.forge, err = s.store.GetForge(ctx, p.ForgeID)
	case tg.agent != nil && tg.agent.Forge != "":
		tg.forge, err = s.store.GetForgeByName(ctx, tg.agent.Forge)
	default:
		return nil, models.Errorf(models.ECONFLICT, "task %d's builder names no forge", t.ID)
	}
	if err != nil {
		return nil, err
	}
	tg.client, tg.login, err = s.client(ctx, tg.forge)
	return tg, err
}

// open starts the pull request of a task just verified: its row first (number 0, so
// that a failure is kept on it and retried by syncPull), then the push and the pull.
func (s *Syncer) open(ctx context.Context, t *models.Task) {
	agent, err := s.store.GetAgent(ctx, *t.BuilderID)
	if err != nil {
		s.cfg.Log.Warn("forge sync: reading a task's builder failed", "task_id", t.ID, "err", err)
		return
	}
	f, err := s.store.GetForgeByName(ctx, agent.Forge)
	if err != nil {
		s.cfg.Log.Warn("forge sync: the builder's forge is gone", "task_id", t.ID, "forge", agent.Forge, "err", err)
		return
	}
	p := &models.ForgePull{TaskID: t.ID, ForgeID: f.ID, State: models.PullOpen}
	err = s.inTx(ctx, func(tx models.ForgeTx) error {
		if _, err := tx.GetForgePull(ctx, t.ID); err == nil {
			return errSkip // another round or server got there first
		}
		return tx.SaveForgePull(ctx, p)
	})
	if err != nil {
		if !errors.Is(err, errSkip) {
			s.cfg.Log.Warn("forge sync: recording a pull request failed", "task_id", t.ID, "err", err)
		}
		return
	}
	s.syncPull(ctx, p, false)
}

var errSkip = errors.New("skip")

// syncPull brings one pull request in step with its task; with poll it also reads
// the forge for the pull's head, merge and reviews. A failure is kept on the row (an
// event when it is a new one) and retried next round.
func (s *Syncer) syncPull(ctx context.Context, p *models.ForgePull, poll bool) {
	tg, err := s.load(ctx, p.TaskID, p)
	if err == nil {
		err = s.step(ctx, tg, poll)
	}
	s.settle(ctx, p, err)
}

func (s *Syncer) step(ctx context.Context, tg *target, poll bool) error {
	t, p := tg.task, tg.pull
	publishable := t.Commit != "" && (t.State == models.TaskCompleted || t.State == models.TaskVerified)
	if publishable && (p.Number == 0 || t.Commit != p.Commit) {
		if err := s.publish(ctx, tg); err != nil {
			return err
		}
	}
	if p.Number == 0 {
		return nil // reopened before its pull request was opened: it waits for its work
	}
	if err := s.status(ctx, tg); err != nil {
		return err
	}
	if !poll {
		return nil
	}
	return s.poll(ctx, tg)
}

// settle saves what a sync left on the pull request: its error, or none.
func (s *Syncer) settle(ctx context.Context, p *models.ForgePull, syncErr error) {
	msg := ""
	if syncErr != nil {
		msg = contract.Truncate(syncErr.Error(), 1000)
	}
	err := s.inTx(ctx, func(tx models.ForgeTx) error {
		cur, err := tx.LockForgePull(ctx, p.TaskID)
		if err != nil {
			return err
		}
		if cur.Error == msg {
			return nil // logged and recorded when it was new
		}
		if msg != "" {
			s.cfg.Log.Warn("forge sync failed; it is retried every round", "task_id", p.TaskID, "err", msg)
		}
		cur.Error = msg
		if err := tx.SaveForgePull(ctx, cur); err != nil {
			return err
		}
		if msg == "" {
			return nil
		}
		return s.cfg.Forges.Emit(ctx, tx, models.EventForgeSyncFailed, models.System, p.TaskID,
			map[string]any{"forge_id": cur.ForgeID, "number": cur.Number, "error": msg})
	})
	if err != nil && models.ErrorCode(err) != models.ENOTFOUND {
		s.cfg.Log.Error("forge sync: recording the outcome failed", "task_id", p.TaskID, "err", err)
	}
}

// publish pushes the task's verified commit to its branch on the forge and opens or
// updates the pull request, then records the commit it now shows. The status of the
// commit it replaces turns to failure: it is no longer what was verified.
func (s *Syncer) publish(ctx context.Context, tg *target) error {
	t, p := tg.task, tg.pull
	if t.Commit == "" || t.Branch == "" || tg.agent == nil {
		return fmt.Errorf("task %d has no verified commit on a branch to publish", t.ID)
	}
	if s.cfg.Workspaces == nil {
		return errors.New("this server has no workspaces to push from")
	}
	var cloneURL string
	if err := s.call(ctx, func(ctx context.Context) (err error) { cloneURL, err = tg.client.CloneURL(ctx); return err }); err != nil {
		return err
	}
	push := workspace.ForgePush{Repo: tg.agent.Workdir, URL: cloneURL, Header: tg.client.PushHeader(),
		Commit: t.Commit, Branch: t.Branch, Notes: true}
	err := s.call(ctx, func(ctx context.Context) error { return s.cfg.Workspaces.PushToForge(ctx, push) })
	var notes *workspace.NotesPushError
	if errors.As(err, &notes) {
		s.cfg.Log.Warn("forge sync: the attestation notes were not pushed", "task_id", t.ID, "err", err)
	} else if err != nil {
		return err
	}
	state, desc, err := s.desired(ctx, t)
	if err != nil {
		return err
	}
	spec := s.pullSpec(ctx, tg, t.Commit, state, desc)
	var pr forge.Pull
	if err := s.call(ctx, func(ctx context.Context) (err error) { pr, err = tg.client.EnsurePull(ctx, spec); return err }); err != nil {
		return err
	}
	old, opened := p.Commit, p.Number == 0
	if old != "" && old != t.Commit {
		desc := "Superseded: task " + strconv.FormatInt(t.ID, 10) + " was verified again at " + short(t.Commit)
		if err := s.setStatus(ctx, tg, old, forge.StateFailure, desc); err != nil {
			return err
		}
	}
	p.Number, p.URL, p.Commit, p.Status, p.StatusNote = pr.Number, pr.URL, t.Commit, "", ""
	typ := models.EventForgePullUpdated
	if opened {
		typ = models.EventForgePullOpened
	}
	return s.record(ctx, p, typ, map[string]any{"forge": tg.forge.Name, "number": pr.Number, "url": pr.URL, "commit": t.Commit, "branch": t.Branch})
}

// pullSpec is the pull request for tg's task showing commit, whose status is state.
func (s *Syncer) pullSpec(ctx context.Context, tg *target, commit string, state forge.State, desc string) forge.PullSpec {
	return forge.PullSpec{Head: tg.task.Branch, Base: baseBranch(tg), Title: fmt.Sprintf("%s (Countersign task %d)", tg.task.Title, tg.task.ID),
		Body: s.body(ctx, tg, commit, state, desc)}
}

// baseBranch is where the pull request merges: the forge's target branch, else the
// agent's, else main.
func baseBranch(tg *target) string {
	switch {
	case tg.forge.TargetBranch != "":
		return tg.forge.TargetBranch
	case tg.agent != nil && tg.agent.TargetBranch != "":
		return tg.agent.TargetBranch
	}
	return "main"
}

// status sets countersign/verified on the verified commit when what the task says
// now differs from what was last set, and refreshes the description with it.
func (s *Syncer) status(ctx context.Context, tg *target) error {
	p := tg.pull
	if p.Commit == "" {
		return nil
	}
	state, desc, err := s.desired(ctx, tg.task)
	if err != nil {
		return err
	}
	if string(state) == p.Status && desc == p.StatusNote {
		return nil
	}
	if err := s.setStatus(ctx, tg, p.Commit, state, desc); err != nil {
		return err
	}
	if p.Status != "" {
		// A change after the first: the description says what happened since.
		spec := s.pullSpec(ctx, tg, p.Commit, state, desc)
		if err := s.call(ctx, func(ctx context.Context) error { _, err := tg.client.EnsurePull(ctx, spec); return err }); err != nil {
			return err
		}
	}
	p.Status, p.StatusNote = string(state), desc
	return s.record(ctx, p, "", nil)
}

// desired is the status the verified commit should carry now. Only a task that is
// verified, not stale and whose completion stands on the ledger gets success — and,
// for the last step of a chain, only while every step before it does too: its commit
// holds their work.
func (s *Syncer) desired(ctx context.Context, t *models.Task) (forge.State, string, error) {
	steps, err := s.chain(ctx, t)
	if err != nil {
		return "", "", err
	}
	for i := range steps {
		st := &steps[i]
		if state, desc, err := s.standing(ctx, st); err != nil || state != forge.StateSuccess {
			return forge.StateFailure, "Step: " + desc, err
		}
		if st.VerifiedAt != nil && t.VerifiedAt != nil && st.VerifiedAt.After(*t.VerifiedAt) {
			// Its work changed after this commit was made on it.
			return forge.StateFailure, "Step: task " + strconv.FormatInt(st.ID, 10) + " was verified again after this commit", nil
		}
	}
	return s.standing(ctx, t)
}

// standing is one task's own standing as a status.
func (s *Syncer) standing(ctx context.Context, t *models.Task) (forge.State, string, error) {
	id := strconv.FormatInt(t.ID, 10)
	switch {
	case t.Drift != nil:
		return forge.StateFailure, "Stale: task " + id + "'s verified work no longer holds", nil
	case t.State == models.TaskCompleted:
		return forge.StatePending, "Checks passed; awaiting a person's verification (" + t.Verify + ")", nil
	case t.State == models.TaskCancelled:
		return forge.StateFailure, "Task " + id + " was cancelled", nil
	case t.State != models.TaskVerified:
		return forge.StateFailure, "Task " + id + " was reopened: not verified", nil
	}
	e, err := s.cfg.Service.Ledger.StandingCompletion(ctx, t.ID)
	if err != nil {
		return "", "", err
	}
	if e == nil {
		return forge.StateFailure, "Task " + id + "'s verification was withdrawn", nil
	}
	return forge.StateSuccess, "Verified by Countersign: task " + id, nil
}

// chain returns the tasks t builds on, directly or not, oldest first (at most 200):
// the steps whose verified work its commit holds.
func (s *Syncer) chain(ctx context.Context, t *models.Task) ([]models.Task, error) {
	seen := map[int64]bool{t.ID: true}
	var out []models.Task
	next := t.DependsOn
	for len(next) > 0 && len(out) < 200 {
		deps, err := s.store.GetTasks(ctx, next)
		if err != nil {
			return nil, err
		}
		next = nil
		for _, d := range deps {
			if seen[d.ID] {
				continue
			}
			seen[d.ID] = true
			out = append(out, d)
			next = append(next, d.DependsOn...)
		}
	}
	slices.SortFunc(out, func(a, b models.Task) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// setStatus sets the status on sha and records it.
func (s *Syncer) setStatus(ctx context.Context, tg *target, sha string, state forge.State, desc string) error {
	st := forge.Status{State: state, Description: desc, TargetURL: s.taskURL(tg.task.ID)}
	if err := s.call(ctx, func(ctx context.Context) error { return tg.client.SetStatus(ctx, sha, st) }); err != nil {
		return err
	}
	return s.inTx(ctx, func(tx models.ForgeTx) error {
		return s.cfg.Forges.Emit(ctx, tx, models.EventForgeStatus, models.System, tg.task.ID,
			map[string]any{"forge": tg.forge.Name, "number": tg.pull.Number, "commit": sha, "state": string(state), "description": desc})
	})
}

// record saves p, with an event of type typ when typ is not empty.
func (s *Syncer) record(ctx context.Context, p *models.ForgePull, typ string, data map[string]any) error {
	return s.inTx(ctx, func(tx models.ForgeTx) error {
		cur, err := tx.LockForgePull(ctx, p.TaskID)
		if err != nil {
			return err
		}
		// What webhooks did meanwhile stands.
		p.Reviews, p.Error = cur.Reviews, cur.Error
		if cur.State != models.PullOpen {
			p.State, p.MergeSHA = cur.State, cur.MergeSHA
		}
		if p.Moved == "" {
			p.Moved = cur.Moved
		}
		if err := tx.SaveForgePull(ctx, p); err != nil {
			return err
		}
		if typ == "" {
			return nil
		}
		return s.cfg.Forges.Emit(ctx, tx, typ, models.System, p.TaskID, data)
	})
}

func (s *Syncer) taskURL(id int64) string {
	return s.cfg.BaseURL + "/tasks/" + strconv.FormatInt(id, 10)
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
