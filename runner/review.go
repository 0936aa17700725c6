package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/checks"
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
//   - Rounds: the round is 1 + the failed review rounds since the task last passed.
//     REVIEW_FAIL (or no signal: fail closed, see checks.ReviewDecision) with rounds
//     left makes the next attempt a fix attempt: the builder runs again in the same
//     workspace with the reviewer's feedback as the diagnosis, and the fix attempt
//     does not use up the work budget. This is the seed's fix task, kept as an
//     attempt of the same task so the evidence stays in one place. A failure in the
//     last round blocks the task with stage review and the last feedback.
//   - The reviewer is picked among enabled worker agents with the role (least recently
//     created first); its concurrency is not counted, since a review is part of the
//     builder's slot. No such agent, or a reviewer that crashes or cannot start, is an
//     infrastructure failure (an error verdict, which check tries again on its own).
func (p *Pool) review(ctx context.Context, tr *taskRun, ar *attemptRun) models.CheckResult {
	t := &tr.task
	rv := t.Contract.Review
	start := time.Now()
	ar.reviewAgain = false
	skipped := func(why string) models.CheckResult {
		return models.CheckResult{Stage: models.StageReview, Verdict: models.VerdictSkipped, Diagnosis: why}
	}
	errored := func(diag string) models.CheckResult {
		return models.CheckResult{Stage: models.StageReview, Verdict: models.VerdictError, Diagnosis: diag,
			DurationMS: time.Since(start).Milliseconds()}
	}
	if rv == nil {
		return skipped("the contract asks for no artifact review")
	}
	due, err := p.reviewDue(ctx, t, rv)
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
	round := 1 + reviewRoundsFailed(ar.history)
	artifact, err := p.artifact(ar)
	if err != nil {
		return errored("reading the artifact: " + err.Error())
	}
	brief := reviewBrief(t, ar, round, rv.MaxRounds, artifact)
	briefPath := filepath.Join(ar.ws.MetaDir, fmt.Sprintf("review-%d.md", ar.num))
	if err := os.WriteFile(briefPath, []byte(brief), 0o640); err != nil {
		return errored(err.Error())
	}
	timeout := t.Contract.Completion.Timeout.Duration
	if timeout <= 0 {
		timeout = models.DefaultTimeout
	}
	if err := os.MkdirAll(p.agentHome(reviewer), 0o750); err != nil {
		return errored(err.Error())
	}
	res, err := worker.Run(ctx, worker.Spec{
		Command: reviewer.Command,
		Dir:     ar.ws.Dir,
		Stdin:   strings.NewReader(brief),
		Env: append(append(p.taskEnv(tr, ar), p.confinedEnv(ar, reviewer)...), EnvReviewRound+"="+strconv.Itoa(round),
			EnvBriefFile+"="+briefPath), // the later entry wins: the review brief
		Timeout:   timeout,
		KillGrace: p.cfg.KillGrace,
		Confine:   p.confinement(tr, ar, reviewer),
		LogPath:   filepath.Join(ar.ws.MetaDir, fmt.Sprintf("review-%d.log", ar.num)),
	})
	took := time.Since(start).Milliseconds()
	switch {
	case err != nil:
		return errored(fmt.Sprintf("reviewer %s could not run: %v", reviewer.Name, err))
	case res.Cancelled:
		return errored(fmt.Sprintf("reviewer %s was interrupted", reviewer.Name))
	case res.TimedOut || res.ExitCode != 0:
		return errored(fmt.Sprintf("reviewer %s failed (exit status %d, timed out %v) without a verdict", reviewer.Name, res.ExitCode, res.TimedOut))
	}
	verdict, feedback := checks.ParseReviewSignal(string(res.Tail))
	out := checks.ReviewDecision(verdict, feedback, round, rv.MaxRounds)
	out.Check.DurationMS = took
	out.Check.Diagnosis = strings.TrimSpace(fmt.Sprintf("(reviewer %s) %s", reviewer.Name, out.Check.Diagnosis))
	if out.Check.Verdict == models.VerdictPass {
		out.Check.Diagnosis = ""
	}
	ar.reviewAgain = out.Again
	return out.Check
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

// reviewDue decides the review's triggers for t (see review).
func (p *Pool) reviewDue(ctx context.Context, t *models.Task, rv *models.Review) (bool, error) {
	index, total, phaseChanged := 0, 1, true
	if t.RunID != nil && t.GoalID != nil && t.StepNum > 0 {
		tasks, err := p.store.ListTasks(ctx, models.TaskFilter{GoalID: *t.GoalID, Limit: 1000})
		if err != nil {
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
		index = t.StepNum - 1
		prev, ok := roles[t.StepNum-1]
		phaseChanged = !ok || prev != t.Role
	}
	return checks.ReviewDue(rv.When, rv.Every, index, total, phaseChanged), nil
}

// pickReviewer finds an enabled worker agent with role that is not the builder.
func (p *Pool) pickReviewer(ctx context.Context, tr *taskRun, role string) (*models.Agent, error) {
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
func reviewBrief(t *models.Task, ar *attemptRun, round, maxRounds int, artifact []byte) string {
	if maxRounds <= 0 {
		maxRounds = checks.DefaultReviewRounds
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Artifact review of task %d: %s\n\nReview round %d of %d.\n\n", t.ID, t.Title, round, maxRounds)
	b.WriteString("## The task as given to the worker\n\n" + indent(strings.TrimSpace(t.Brief)) + "\n\n")
	b.WriteString("## Its contract\n\n" + models.RenderContract(t.Contract, t.ID) + "\n")
	if prev := lastReviewFeedback(ar.history); prev != "" && round > 1 {
		fmt.Fprintf(&b, "## Prior findings (round %d)\n\n%s\n\n", round-1, indent(prev))
	}
	where := "what the worker printed"
	if ar.outAbs != "" {
		where = ar.outAbs
	}
	fmt.Fprintf(&b, "## The artifact (%s)\n\n%s\n\n", where, indent(string(artifact)))
	b.WriteString("## Your answer\n\nJudge the artifact against the task and its contract. If it falls short, give specific, actionable feedback under a heading \"Feedback for Revision\". " +
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
