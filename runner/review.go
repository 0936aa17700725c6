package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/checks"
	"github.com/countersign/countersign/runner/judge"
	"github.com/countersign/countersign/runner/judge/fileparts"
	"github.com/countersign/countersign/runner/worker"
)

// EnvReviewRound tells a reviewer which round of the artifact review it is in.
const EnvReviewRound = "COUNTERSIGN_REVIEW_ROUND"

// review runs the artifact review (verification-layers.md, layer 3) when the contract
// asks for one and its triggers fire: a worker agent with the review role, other than
// the builder, reads the artifact and ends with REVIEW_PASS or REVIEW_FAIL on its last
// line.
//
// What is implemented:
//   - Triggers: "always"; "final" is the last step of the task's workflow run; "every"
//     is every N-th step (step_num-1 divisible by N); "phase" is the first step of a new
//     phase, where a phase is a run of consecutive steps with the same role. A task
//     outside a run counts as the only, final step.
//   - Parallel batches: the tasks of a parallel group are reviewed once, together,
//     when the last of them passes its other checks (see batchReviewNext, decided in
//     the settle's transaction so that two tasks ending at once cannot both skip it).
//     The review of a batch uses the group's first review settings, is indexed by the
//     group's first step (its triggers and its summary), and shows the reviewer every
//     task's description and the union of their changed files. The others pass
//     without it: they are verified (their task.complete entries written) before the
//     review runs, and a failed review does not reopen them. What guards the goal is
//     the last task, which is not verified until its review passes: the step after
//     the group depends on it, a failed round adds a fix task (working in the last
//     task's workspace), and rounds that run out block it or pass it with warnings.
//   - Rounds: the round is 1 + the failed review rounds since the task last passed,
//     at most max_rounds (3). REVIEW_FAIL — or no signal, which fails closed (see
//     checks.ReviewDecision) — with rounds left adds a fix task (review_fix.go): a
//     task of its own, with the reviewer's findings as its brief, the reviewed task's
//     role (assigned by role) and goal, linked to it by review_of, working in the
//     reviewed task's workspace. The reviewed task waits for it (its lease released,
//     no attempt used) and when the fix is verified its next attempt is the review
//     alone, the next round: the worker does not run again. That is decided from the
//     fix task itself (reviewFixVerified: a verified dependency with review_of = the
//     task, created since its last attempt), never from the diagnosis's words.
//   - Rounds run out: on_exhausted block (the default) blocks the task with stage
//     review and the last findings; proceed_with_warnings passes it with the findings
//     appended to the task as warnings (Task.ReviewWarnings, shown on its page).
//   - Every round ends with a summary in the review's check and a review.round event:
//     the step it is indexed by, the round, REVIEW_PASS or REVIEW_FAIL, at most three
//     findings and the action taken (models.ReviewSummary).
//   - The reviewer is picked among enabled worker agents with the role (least recently
//     created first); its concurrency is not counted, since a review is part of the
//     builder's slot. No such agent, or a reviewer that crashes or cannot start, is an
//     infrastructure failure (an error verdict, which check tries again on its own).
func (p *reviewing) review(ctx context.Context, tr *taskRun, ar *attemptRun) models.CheckResult {
	t := &tr.task
	start := time.Now()
	ar.reviewAgain, ar.deferredTo = false, nil
	skipped := func(why string) models.CheckResult {
		return models.CheckResult{Stage: models.StageReview, Verdict: models.VerdictSkipped, Diagnosis: why}
	}
	errored := func(diag string) models.CheckResult {
		return models.CheckResult{Stage: models.StageReview, Verdict: models.VerdictError, Diagnosis: diag,
			DurationMS: time.Since(start).Milliseconds()}
	}
	b, err := p.reviewBatch(ctx, t)
	if err != nil {
		return errored("reading the task's parallel group: " + err.Error())
	}
	rv := effectiveReview(t.Contract.Review)
	if b != nil {
		rv = effectiveReview(b.review)
	}
	if rv == nil {
		return skipped("the contract asks for no artifact review")
	}
	if b != nil && !ar.reviewOnly {
		ar.deferredTo = b
		return skipped(batchDeferred + fmt.Sprintf(" (group %q, steps %d-%d)", b.group, b.first, b.last))
	}
	due, err := p.reviewDue(ctx, t, rv, b)
	if err != nil {
		return errored("deciding whether the review is due: " + err.Error())
	}
	if !due {
		return skipped("the review's triggers (" + strings.Join(rv.When, ", ") + ") do not fire for this step")
	}
	reviewer, err := p.pickReviewer(ctx, tr, rv.Role)
	if err != nil {
		return errored(err.Error())
	}
	rr := reviewRound{rv: rv, b: b, reviewer: reviewer, maxRounds: rv.MaxRounds}
	rr.round = 1 + reviewRoundsFailed(ar.history)
	res, diag := p.runReviewer(ctx, tr, ar, &rr)
	if diag != "" {
		return errored(diag)
	}
	return rr.decide(ar, res, time.Since(start).Milliseconds())
}

// reviewRound is one round of an artifact review: who reviews, which round of how
// many, and what the reviewer was given.
type reviewRound struct {
	rv        *contract.Review
	b         *batch
	reviewer  *models.Agent
	round     int
	maxRounds int
	in        reviewInput
}

// runReviewer writes the review brief and runs the reviewer on the candidate (in the
// judge's view of it when there is one). A non-empty diagnosis says why no verdict
// came: an error verdict.
func (p *reviewing) runReviewer(ctx context.Context, tr *taskRun, ar *attemptRun, rr *reviewRound) (worker.Result, string) {
	t, reviewer := &tr.task, rr.reviewer
	artifact, err := attemptArtifact(ar)
	if err != nil {
		return worker.Result{}, "reading the artifact: " + err.Error()
	}
	rr.in = p.reviewInput(ctx, t, ar, rr.b)
	brief := reviewBrief(t, ar, rr.round, rr.maxRounds, artifact, rr.in)
	briefPath := filepath.Join(ar.ws.MetaDir, fmt.Sprintf("review-%d.md", ar.num))
	if err := os.WriteFile(briefPath, []byte(brief), 0o640); err != nil {
		return worker.Result{}, err.Error()
	}
	timeout := attemptTimeout(t)
	if err := os.MkdirAll(p.conf.agentHome(reviewer), 0o750); err != nil {
		return worker.Result{}, err.Error()
	}
	dir, confine := ar.ws.Dir, p.conf.confinement(tr, ar, reviewer)
	view, err := p.reviewView(ctx, tr, ar)
	if err != nil {
		return worker.Result{}, "preparing the reviewer's view of the candidate: " + err.Error()
	}
	if view != nil {
		defer func() { _ = view.Close() }()
		dir, confine = view.Root(), p.conf.viewConfinement(tr, ar, reviewer, view.Root())
	}
	res, err := worker.Run(ctx, worker.Spec{
		Command: reviewer.Command,
		Dir:     dir,
		Stdin:   strings.NewReader(brief),
		Env: append(append(p.conf.taskEnv(tr, ar), p.conf.confinedEnv(ar, reviewer)...), EnvReviewRound+"="+strconv.Itoa(rr.round),
			EnvBriefFile+"="+briefPath), // the later entry wins: the review brief
		Timeout:   timeout,
		KillGrace: p.cfg.KillGrace,
		Confine:   confine,
		LogPath:   filepath.Join(ar.ws.MetaDir, fmt.Sprintf("review-%d.log", ar.num)),
	})
	switch {
	case err != nil:
		return res, fmt.Sprintf("reviewer %s could not run: %v", reviewer.Name, err)
	case res.Cancelled:
		return res, fmt.Sprintf("reviewer %s was interrupted", reviewer.Name)
	case res.TimedOut || res.ExitCode != 0:
		return res, fmt.Sprintf("reviewer %s failed (exit status %d, timed out %v) without a verdict", reviewer.Name, res.ExitCode, res.TimedOut)
	}
	return res, ""
}

// decide turns the reviewer's last line into the review layer's result and what the
// attempt does next: proceed, a fix task for another round, warnings, or blocked.
func (rr *reviewRound) decide(ar *attemptRun, res worker.Result, took int64) models.CheckResult {
	round, maxRounds, in := rr.round, rr.maxRounds, rr.in
	verdict, feedback := checks.ParseReviewSignal(string(res.Tail))
	out := checks.ReviewDecision(verdict, feedback, round, maxRounds)
	sum := models.ReviewSummary{Index: in.index, Round: round, MaxRounds: maxRounds, Status: checks.ReviewFailSignal,
		Findings: models.ReviewFindings(feedback, 3)}
	res2 := out.Check
	res2.DurationMS = took
	detail := strings.TrimSpace(fmt.Sprintf("(reviewer %s) %s", rr.reviewer.Name, res2.Diagnosis))
	switch {
	case res2.Verdict == models.VerdictPass:
		sum.Status, sum.Action, detail = checks.ReviewPassSignal, models.ReviewActionProceeded, ""
	case out.Again:
		sum.Action = models.ReviewActionFixTask
		ar.reviewAgain = true
		ar.reviewFix = &models.ReviewFix{Index: in.index, Round: round, MaxRounds: maxRounds, Findings: feedbackOr(feedback, res2.Diagnosis),
			Files: in.files, Tasks: in.tasks}
	case rr.rv.ProceedsWithWarnings():
		sum.Action = models.ReviewActionWarnings
		ar.reviewWarning = models.ExhaustedWarning(maxRounds, feedbackOr(feedback, res2.Diagnosis))
		res2.Verdict = models.VerdictPass // the contract lets it through, with the warnings
	default:
		sum.Action = models.ReviewActionBlocked
	}
	ar.reviewSummary = &sum
	res2.Diagnosis = strings.TrimSpace(sum.String() + "\n\n" + detail)
	return res2
}

// feedbackOr is the reviewer's feedback, or diag when it wrote none.
func feedbackOr(feedback, diag string) string {
	if strings.TrimSpace(feedback) != "" {
		return feedback
	}
	return diag
}

// reviewRoundsFailed counts the review rounds that failed since the task last passed.
func reviewRoundsFailed(history []models.Attempt) int {
	n := 0
	for i := len(history) - 1; i >= 0; i-- {
		a := history[i]
		if a.Outcome == models.OutcomePassed {
			break
		}
		if a.Outcome == models.OutcomeFailed && a.Stage == models.StageReview {
			n++
		}
	}
	return n
}

// reviewDue decides the review's triggers for t (see review), rv normalised
// (effectiveReview) so that its when is never empty; a batch is judged as
// its group's first step, and is the final step when the group ends the run.
func (p *reviewing) reviewDue(ctx context.Context, t *models.Task, rv *contract.Review, b *batch) (due bool, err error) {
	index, total, phaseChanged := 0, 1, true
	if t.RunID != nil && t.GoalID != nil && t.StepNum > 0 {
		var tasks []models.Task
		if b != nil {
			tasks = b.goal // reviewBatch just read them
		} else if tasks, err = p.store.ListTasks(ctx, models.TaskFilter{GoalID: *t.GoalID, Limit: 1000}); err != nil {
			return false, err
		}
		roles := map[int]string{}
		total = 0
		for _, o := range tasks {
			if o.RunID != nil && *o.RunID == *t.RunID {
				total++
				roles[o.StepNum] = o.Role
			}
		}
		step := t.StepNum
		if b != nil {
			step = b.first
			if b.last == total && slices.Contains(rv.When, contract.ReviewFinal) {
				return true, nil // the group ends the run: its review is the final one
			}
		}
		index = step - 1
		prev, ok := roles[step-1]
		phaseChanged = !ok || prev != roles[step]
	}
	return checks.ReviewDue(rv.When, rv.Every, index, total, phaseChanged), nil
}

// pickReviewer finds an enabled worker agent with role that is not the builder.
func (p *reviewing) pickReviewer(ctx context.Context, tr *taskRun, role string) (*models.Agent, error) {
	agents, err := p.store.ListAgents(ctx)
	if err != nil {
		return nil, err
	}
	for i := range agents {
		a := &agents[i]
		if a.Kind == models.KindWorker && !a.Disabled && a.HasRole(role) && a.ID != tr.agent.ID {
			return a, nil
		}
	}
	return nil, fmt.Errorf("no enabled worker agent with role %q other than the builder can review the artifact", role)
}

// reviewBrief is what the reviewer reads on stdin.
func reviewBrief(t *models.Task, ar *attemptRun, round, maxRounds int, artifact []byte, in reviewInput) string {
	var b strings.Builder
	if len(in.tasks) > 1 {
		fmt.Fprintf(&b, "# Artifact review of a parallel batch (steps %s), indexed by step %d\n\nReview round %d of %d.\n\n", in.steps, in.index, round, maxRounds)
		b.WriteString("## The tasks as given to the workers\n\n" + strings.Join(in.tasks, "\n\n") + "\n\n")
	} else {
		fmt.Fprintf(&b, "# Artifact review of task %d: %s\n\nReview round %d of %d.\n\n", t.ID, t.Title, round, maxRounds)
		b.WriteString("## The task as given to the worker\n\n" + indent(strings.TrimSpace(t.Brief)) + "\n\n")
	}
	b.WriteString("## Its contract\n\n" + contract.RenderContract(t.Contract, t.ID) + "\n")
	if len(in.files) > 0 {
		b.WriteString("## Changed files\n\n- " + strings.Join(in.files, "\n- ") + "\n\n")
	}
	if prev := lastReviewFeedback(ar.history); prev != "" && round > 1 {
		fmt.Fprintf(&b, "## Prior findings (round %d)\n\n%s\n\n", round-1, indent(prev))
	}
	where := "what the worker printed"
	if ar.outAbs != "" {
		where = ar.outAbs
	}
	fmt.Fprintf(&b, "## The artifact (%s)\n\n%s\n\n", where, indent(string(artifact)))
	b.WriteString("## Your answer\n\nJudge the artifact against the task and its contract. If it falls short, give specific, actionable feedback under a heading \"Feedback for Revision\", one finding per list item. " +
		"End with REVIEW_PASS or REVIEW_FAIL alone on the last line.\n")
	return b.String()
}

// lastReviewFeedback is the diagnosis of the newest failed review round.
func lastReviewFeedback(history []models.Attempt) string {
	for i := len(history) - 1; i >= 0; i-- {
		if a := history[i]; a.Outcome == models.OutcomeFailed && a.Stage == models.StageReview {
			return a.Diagnosis
		}
	}
	return ""
}

// AgentConfigPaths are the files a coding agent reads as instructions or settings
// when it starts in a directory (Claude Code's CLAUDE.md and .claude/, the AGENTS.md
// convention, Cursor's, Copilot's and Gemini's, MCP server lists). A reviewer reads the
// candidate with these as the base had them: a worker that wrote "approve this" into
// CLAUDE.md, or a hook into .claude/settings.json, does not reach its reviewer.
var AgentConfigPaths = []string{"CLAUDE.md", "CLAUDE.local.md", ".claude/**", "AGENTS.md", ".cursorrules", ".cursor/**",
	".github/copilot-instructions.md", "GEMINI.md", ".gemini/**", ".mcp.json"}

// reviewView opens the reviewer's own view of the attempt's candidate: the base's
// environment, the candidate's changes, and the protected paths and the agent
// configuration (AgentConfigPaths) as the base had them. nil when the task has no
// Env (a contract that runs nothing and asks for no review of its own, reviewed in a
// parallel group's batch): the reviewer then reads the workspace, as before.
func (p *reviewing) reviewView(ctx context.Context, tr *taskRun, ar *attemptRun) (*judge.TreeView, error) {
	jr := ar.judge
	if jr == nil || jr.cand == nil || jr.base.Env == "" {
		return nil, nil
	}
	rules := append(judge.ParseRules(AgentConfigPaths), jr.rules...)
	view, _, err := judge.OpenView(ctx, judge.ViewRequest{Env: jr.base.Env, Dir: filepath.Join(jr.dir, "review-view"),
		Trees: p.judgeStore, Base: jr.base.Commit, Candidate: jr.cand.Commit, Rules: rules, Restore: true,
		Parts: fileparts.Restore, Names: partNames(contractCommands(&tr.task.Contract, jr.activities))})
	return view, err
}
