package runner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/workspace"
)

// batchDeferred starts the diagnosis of the review check a task of a parallel group
// skips: its batch is reviewed once, with the last of its tasks (see review).
const batchDeferred = "reviewed with its parallel batch: the last task of the group to pass runs the batch's review"

// reviewRun is what an attempt carries for the artifact review (review.go).
type reviewRun struct {
	// reviewOnly: this attempt is the review alone, the next round after a verified
	// fix task or a parallel batch's review; the worker does not run.
	reviewOnly bool
	// reviewFix is the fix task a failed round with rounds left hands over.
	reviewFix *models.ReviewFix
	// reviewSummary is the round's summary, for the review.round event.
	reviewSummary *models.ReviewSummary
	// reviewWarning is what a review that ran out of rounds under
	// proceed_with_warnings appends to the task.
	reviewWarning string
	// deferredTo is the parallel batch the attempt's review was left to (review), for
	// the settle's batchReviewNext; nil when the review ran or was not due to a batch.
	deferredTo *batch
}

// batch is a parallel group of a workflow run, as its review sees it.
type batch struct {
	group       string
	first, last int           // step numbers, 1-based
	tasks       []models.Task // the group's tasks, in step order
	review      *contract.Review
	goal        []models.Task // every task of the goal as read with the group, for reviewDue
}

// reviewBatch returns t's parallel group, nil when t is no step of one (or its group
// has one step). The batch's review is the first its steps ask for.
func (p *reviewing) reviewBatch(ctx context.Context, t *models.Task) (*batch, error) {
	if t.RunID == nil || t.GoalID == nil || t.StepNum <= 0 || t.ReviewOf != nil {
		return nil, nil
	}
	run, err := p.store.GetRun(ctx, *t.RunID)
	if err != nil {
		return nil, err
	}
	tpl, err := p.store.GetTemplate(ctx, run.TemplateName, run.TemplateVersion)
	if err != nil {
		return nil, err
	}
	stage := models.StageOf(tpl.Steps, t.StepNum-1)
	if len(stage) < 2 {
		return nil, nil
	}
	b := &batch{group: tpl.Steps[stage[0]].Parallel, first: stage[0] + 1, last: stage[len(stage)-1] + 1}
	tasks, err := p.store.ListTasks(ctx, models.TaskFilter{GoalID: *t.GoalID, Limit: 1000})
	if err != nil {
		return nil, err
	}
	b.goal = tasks
	for _, o := range tasks {
		if o.RunID != nil && *o.RunID == *t.RunID && o.ReviewOf == nil && o.StepNum >= b.first && o.StepNum <= b.last {
			b.tasks = append(b.tasks, o)
		}
	}
	slices.SortFunc(b.tasks, func(x, y models.Task) int { return x.StepNum - y.StepNum })
	for _, o := range b.tasks {
		if o.Contract.Review != nil {
			b.review = o.Contract.Review
			break
		}
	}
	return b, nil
}

// reviewInput is what the reviewer is shown besides the artifact: the step the review
// is indexed by, the reviewed tasks' descriptions and the union of their changed
// files.
type reviewInput struct {
	index int
	steps string // "2-3" for a batch
	files []string
	tasks []string
}

// reviewInput gathers the review's input for t, or for its batch b (verification-
// layers.md's parallel batch note: the group's first step as the index, every task's
// description, the union of their changed files).
func (p *reviewing) reviewInput(ctx context.Context, t *models.Task, ar *attemptRun, b *batch) reviewInput {
	in := reviewInput{index: t.StepNum}
	files := map[string]bool{}
	if b == nil {
		addFiles(files, t, nil)
		in.tasks = []string{taskBlock(t)}
		in.files = slices.Sorted(maps.Keys(files))
		return in
	}
	in.index, in.steps = b.first, fmt.Sprintf("%d-%d", b.first, b.last)
	var err error
	for i := range b.tasks {
		o, atts := &b.tasks[i], ar.history
		if o.ID == t.ID {
			o = t // the task as the attempt holds it, its attempts ar.history
		} else if atts, err = p.store.ListAttempts(ctx, o.ID); err != nil {
			atts = nil
		}
		var kept *models.Deliverable
		for j := len(atts) - 1; j >= 0; j-- {
			if atts[j].Outcome == models.OutcomePassed && atts[j].Deliverable != nil {
				kept = atts[j].Deliverable
				break
			}
		}
		addFiles(files, o, kept)
		in.tasks = append(in.tasks, taskBlock(o))
	}
	in.files = slices.Sorted(maps.Keys(files))
	return in
}

// addFiles adds the files t changed as far as they are known: its output, its
// submission's files_changed, what its deliverable kept.
func addFiles(files map[string]bool, t *models.Task, kept *models.Deliverable) {
	if p := t.Contract.OutputPath(t.ID); p != "" {
		files[p] = true
	}
	for _, f := range strings.FieldsFunc(t.FilesChanged, func(r rune) bool { return r == ',' || r == '\n' }) {
		if f = strings.TrimSpace(f); f != "" {
			files[f] = true
		}
	}
	if kept != nil {
		for _, f := range kept.Files {
			files[f.Path] = true
		}
	}
}

// taskBlock is one reviewed task's description.
func taskBlock(t *models.Task) string {
	head := fmt.Sprintf("### Task %d: %s", t.ID, t.Title)
	if t.StepNum > 0 {
		head = fmt.Sprintf("### Task %d (step %d): %s", t.ID, t.StepNum, t.Title)
	}
	return head + "\n\n" + indent(strings.TrimSpace(t.Brief))
}

// reviewOnlyNext reports whether the next attempt of a task is its review alone: the
// pool just deferred a passed task to its batch's review, or the claim found the fix
// task the last attempt's failed review round added verified (tr.reviewNext). Both
// are facts the pool recorded, never words read from a diagnosis, which carries the
// reviewer's free text. Each answers one attempt: an attempt after it (say, after an
// infrastructure failure) runs the worker.
func reviewOnlyNext(tr *taskRun) bool {
	next := tr.reviewNext
	tr.reviewNext = false
	return next
}

// reviewFixVerified decides, in the claim's transaction, whether t's last attempt
// was a review round that failed with rounds left and whose fix task is now
// verified: t depends on a verified task whose review_of is t, created since that
// attempt started (fixes of earlier rounds were created before it). A task retried
// by a person after its rounds ran out, or after its fix task was cancelled (which
// takes the fix off its dependencies), has no such fix: its worker runs again.
func reviewFixVerified(ctx context.Context, tx models.Tx, t *models.Task, history []models.Attempt) (bool, error) {
	if t.ReviewOf != nil || len(t.DependsOn) == 0 || len(history) == 0 {
		return false, nil
	}
	a := history[len(history)-1]
	if a.Outcome != models.OutcomeFailed || a.Stage != models.StageReview {
		return false, nil
	}
	deps, err := tx.GetTasks(ctx, t.DependsOn)
	if err != nil {
		return false, err
	}
	for _, d := range deps {
		if d.ReviewOf != nil && *d.ReviewOf == t.ID && d.State == models.TaskVerified && !d.CreatedAt.Before(a.StartedAt) {
			return true, nil
		}
	}
	return false, nil
}

// reviewAlone is a review-only attempt: the review layer on the workspace as the fix
// task (or the batch) left it. For a contract without an output file the artifact is
// what the worker printed last.
func (p *checker) reviewAlone(ctx context.Context, tr *taskRun, ar *attemptRun) {
	for i := len(ar.history) - 1; i >= 0 && ar.outAbs == ""; i-- {
		if tail := ar.history[i].OutputTail; tail != "" {
			ar.res.Tail = []byte(tail)
			break
		}
	}
	if !p.layer(ctx, ar, func() models.CheckResult { return p.reviews.review(ctx, tr, ar) }) || interrupted(ctx, ar) {
		return
	}
	ar.outputHash = outputHashOf(expandedCompletion(&tr.task), ar)
	ar.outcome = models.OutcomePassed
}

// reviewSettled records, in the settle's transaction, what a review round decided: a
// failed round with rounds left adds the fix task (the task then waits for it, lease
// released, no attempt used); a review out of rounds under proceed_with_warnings
// appends its findings to the task's warnings; every round is a review.round event
// with its summary.
func (p *reviewing) reviewSettled(ctx context.Context, tx models.Tx, t *models.Task, ar *attemptRun) error {
	sum := ar.reviewSummary
	if sum == nil || (ar.outcome != models.OutcomeFailed && ar.outcome != models.OutcomePassed) {
		return nil
	}
	data := map[string]any{"attempt": ar.num, "index": sum.Index, "round": sum.Round, "max_rounds": sum.MaxRounds,
		"status": sum.Status, "findings": sum.Findings, "action": sum.Action}
	switch {
	case ar.outcome == models.OutcomeFailed && ar.reviewAgain && ar.reviewFix != nil:
		fix, err := p.svc.Attempts.AddReviewFixTask(ctx, tx, p.runner, t, *ar.reviewFix)
		if err != nil {
			return err
		}
		data["fix_task_id"] = fix.ID
	case ar.outcome == models.OutcomePassed && ar.reviewWarning != "":
		t.ReviewWarnings = strings.TrimSpace(strings.TrimSpace(t.ReviewWarnings) + "\n\n" + ar.reviewWarning)
	}
	return p.event(ctx, tx, models.EventReviewRound, t, data)
}

// batchReviewNext decides, in the settle's transaction of a passed task whose review
// waits for its parallel batch, whether it is the last of its group to pass: then it
// does not pass yet, and its next attempt is the batch's review (true). The group's
// first task is locked first, so that two tasks of a group settling at once are
// decided one after the other and the second sees the first verified. The others
// (false) pass on as if reviewed — verified, in the ledger — before the batch's review
// runs, and stay so whatever it finds; only the last waits for it (see review).
func (p *reviewing) batchReviewNext(ctx context.Context, tx models.Tx, tr *taskRun, t *models.Task, ar *attemptRun) (bool, error) {
	// The group's steps and tasks are the ones the review check read (ar.deferredTo):
	// they do not change; only their states are read here, in the transaction.
	b := ar.deferredTo
	if ar.reviewOnly || b == nil || len(b.tasks) == 0 {
		return false, nil
	}
	if b.tasks[0].ID != t.ID {
		if _, err := tx.LockTask(ctx, b.tasks[0].ID); err != nil {
			return false, err
		}
	}
	var ids []int64
	for _, o := range b.tasks {
		if o.ID != t.ID {
			ids = append(ids, o.ID)
		}
	}
	others, err := tx.GetTasks(ctx, ids)
	if err != nil {
		return false, err
	}
	for _, o := range others {
		if o.State != models.TaskVerified && o.State != models.TaskCancelled {
			return false, nil
		}
	}
	tr.reviewNext = true
	return true, nil
}

// prepareWorkspace prepares the attempt's workspace. A review's fix task works in the
// workspace of the task it fixes (its directory, or its worktree and branch), so the
// review that runs again sees the fix; its briefs and logs stay in its own metadata
// directory.
func (p *attemptRunner) prepareWorkspace(ctx context.Context, tr *taskRun, req workspace.Request) (*workspace.Workspace, error) {
	t := &tr.task
	if t.ReviewOf == nil {
		return p.cfg.Workspaces.Prepare(ctx, req)
	}
	own, err := p.cfg.Workspaces.Prepare(ctx, workspace.Request{TaskID: t.ID, Attempt: req.Attempt})
	if err != nil {
		return nil, err
	}
	shared := req
	shared.TaskID = *t.ReviewOf
	if req.Worktree {
		shared.Branch = p.cfg.Landing.BranchPrefix + strconv.FormatInt(*t.ReviewOf, 10)
		shared.Base = t.Base
	}
	ws, err := p.cfg.Workspaces.Prepare(ctx, shared)
	if err != nil {
		return nil, err
	}
	ws.MetaDir, ws.TaskID = own.MetaDir, own.TaskID
	return ws, nil
}
