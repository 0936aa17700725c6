package runner

import (
	"context"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/checks"
	"github.com/countersign/countersign/runner/evaluator"
	"github.com/countersign/countersign/runner/worker"
)

// maxArtifactBytes bounds how much of an output file is read for the evaluator or a
// reviewer; they bound it further themselves.
const maxArtifactBytes = 4 * evaluator.DefaultMaxOutputBytes

// record appends a layer's result and reports whether the next layer may run. A fail
// verdict fails the attempt at that stage; an error verdict (the check itself could
// not run) is an infrastructure failure.
func (ar *attemptRun) record(r models.CheckResult) bool {
	ar.checks = append(ar.checks, r)
	switch r.Verdict {
	case models.VerdictPass, models.VerdictSkipped:
		return true
	case models.VerdictError:
		ar.infra(fmt.Sprintf("the %s check could not run: %s", r.Stage, r.Diagnosis), nil)
	default:
		ar.fail(r.Stage, r.Diagnosis)
	}
	return false
}

// check runs the layers cheapest first and stops at the first that does not pass:
// process → contradiction → done token → mechanical → verify → workspace →
// evaluation → review. Advisory tasks stop after the process check (a person looks at
// their output); skip tasks stop after verify (their contract carries only the
// minimal criteria).
//
// A layer after the worker that cannot give a verdict (an error verdict: the evaluator
// is down, a verify command could not start) is tried again on its own, against the
// same output (see layer): the worker is never run again for it.
func (p *checker) check(ctx context.Context, tr *taskRun, ar *attemptRun) {
	t := &tr.task
	cp := expandedCompletion(t)
	if ar.outcome != "" {
		return // decided while it ran (a budget stop, a log that could not be made)
	}
	if interrupted(ctx, ar) || !workerRan(tr, ar) {
		return
	}
	if !ar.record(processCheck(cp, ar)) {
		return
	}
	// Every process of the worker is gone: its result is fixed now, and everything
	// after judges that.
	if !p.judging.takeCandidate(ctx, tr, ar) {
		return
	}
	advisory := t.Contract.Verification.Type == contract.VerifyAdvisory
	if advisory {
		ar.outputHash = outputHashOf(cp, ar)
		ar.outcome = models.OutcomePassed
		return
	}
	if !p.outputLayers(ctx, ar, cp) || !p.verifyInView(ctx, tr, ar) {
		return
	}
	skip := t.Contract.Verification.Type == contract.VerifySkip
	if !skip && !p.judgedLayers(ctx, tr, ar, cp) {
		return
	}
	ar.outputHash = outputHashOf(cp, ar)
	ar.outcome = models.OutcomePassed
}

// workerRan reports whether the worker's command ran at all; when it did not, the
// attempt is decided (an infrastructure failure, or the agent's).
func workerRan(tr *taskRun, ar *attemptRun) bool {
	var se *worker.StartError
	var oe *worker.OutputError
	switch {
	case errors.As(ar.runErr, &se):
		ar.infra("the worker command could not be started: "+se.Error(), se)
		return false
	case errors.As(ar.runErr, &oe):
		ar.infra("the worker's log could not be written, so its evidence is incomplete: "+oe.Error(), oe)
		return false
	case ar.runErr != nil:
		ar.infra("running the worker failed: "+ar.runErr.Error(), ar.runErr)
		return false
	case agentCommandFailed(ar, &tr.agent):
		return false
	}
	return true
}

// processCheck is the process layer: how the worker's process ended.
func processCheck(cp contract.Completion, ar *attemptRun) models.CheckResult {
	proc := checks.Process(ar.res.ExitCode, ar.res.TimedOut, cp.Timeout.Duration)
	if ar.res.Signal != "" && proc.Verdict == models.VerdictFail && !ar.res.TimedOut {
		proc.Diagnosis = fmt.Sprintf("worker was killed by %s before it exited (it crashed or was killed); it must exit with status 0 when the work is done", ar.res.Signal)
	}
	return proc
}

// outputLayers runs the layers that read the worker's output and files as they are:
// contradiction, done token, mechanical.
func (p *checker) outputLayers(ctx context.Context, ar *attemptRun, cp contract.Completion) bool {
	output := string(ar.res.Tail)
	if !ar.record(checks.Contradiction(output, checks.ClaimTokens(cp.DoneToken), p.cfg.ContradictionPhrases)) {
		return false
	}
	if !ar.record(checks.DoneToken(output, cp.DoneToken)) {
		return false
	}
	return p.layer(ctx, ar, func() models.CheckResult { return mechanicalCheck(cp, ar) })
}

// verifyInView runs the verify layer in the judge's view of the candidate, with its
// dependencies installed, and reports whether the attempt may go on.
func (p *checker) verifyInView(ctx context.Context, tr *taskRun, ar *attemptRun) bool {
	if !p.judging.openView(ctx, tr, ar) {
		return false
	}
	if !p.judging.installDependencies(ctx, tr, ar) {
		p.judging.closeView(ar)
		return false
	}
	verified := p.layer(ctx, ar, func() models.CheckResult { return p.verify(ctx, tr, ar) })
	p.judging.closeView(ar)
	return verified && !interrupted(ctx, ar) && ar.outcome != models.OutcomeInfra
}

// judgedLayers runs the layers after verify: the workspace's, the evaluator's, the
// review's.
func (p *checker) judgedLayers(ctx context.Context, tr *taskRun, ar *attemptRun, cp contract.Completion) bool {
	workspace := func() models.CheckResult {
		return checks.Workspace(ctx, ar.ws.Dir, cp.Clean, cp.Checklist, ar.ws.Resolve, p.conf.confinement(tr, ar, &tr.agent))
	}
	if !p.layer(ctx, ar, workspace) || interrupted(ctx, ar) {
		return false
	}
	if !p.layer(ctx, ar, func() models.CheckResult { return p.evaluate(ctx, tr, ar, cp) }) || interrupted(ctx, ar) {
		return false
	}
	return p.layer(ctx, ar, func() models.CheckResult { return p.reviews.review(ctx, tr, ar) }) && !interrupted(ctx, ar)
}

// ErrAgentCommand is the cause of an attempt whose worker command could not run at all
// (exit status 126 or 127): the agent's failure, never the work's.
var ErrAgentCommand = errors.New("the agent's command could not run")

// agentCommandFailed recognises a worker whose own command could not run: the shell's
// exit status 127 (command not found) or 126 (found but not executable, or the sandbox
// refused to execute it). That is the agent's infrastructure failing, not the work:
// no attempt is charged; settling pauses the agent (models.AgentService.PauseAgent) and the
// task waits for it. A worker killed by a signal or its timeout is not this.
func agentCommandFailed(ar *attemptRun, agent *models.Agent) bool {
	code := ar.res.ExitCode
	if (code != 126 && code != 127) || ar.res.TimedOut || ar.res.Signal != "" {
		return false
	}
	what := "not found"
	if code == 126 {
		what = "found but not executable, or not allowed to run"
	}
	ar.agentExit = code
	ar.infra(fmt.Sprintf("the command of agent %s could not run (exit status %d: %s). This is the agent's failure, not the work's: "+
		"no attempt is used, the agent is paused until an admin enables it again, and the task waits for it. The command printed:\n%s",
		agent.Name, code, what, indent(excerpt(clean(string(ar.res.Tail)), 1000))), ErrAgentCommand)
	return true
}

// layer runs one check layer after the worker and records its verdict. An error
// verdict means the layer itself could not judge (the evaluator down or answering
// nonsense, a verify command or git that could not start, a reviewer that crashed):
// the runner's infrastructure, not the worker's. So the layer alone runs again, after
// the infrastructure backoff, against the same output, up to MaxInfraFailures tries in
// all, each failed try kept with the attempt's checks; the worker never runs again
// for it. If no try gives a verdict the attempt is an infrastructure failure that
// blocks the task at once (layerExhausted).
func (p *checker) layer(ctx context.Context, ar *attemptRun, run func() models.CheckResult) bool {
	tries := max(p.cfg.MaxInfraFailures, 1)
	for try := 1; ; try++ {
		r := run()
		if r.Verdict != models.VerdictError {
			return ar.record(r)
		}
		if ctx.Err() != nil {
			ar.checks = append(ar.checks, r)
			interrupted(ctx, ar)
			return false
		}
		if try >= tries {
			if tries > 1 {
				r.Diagnosis = fmt.Sprintf("%s (no verdict in %d tries on the same output)", r.Diagnosis, tries)
			}
			ar.layerExhausted = true
			return ar.record(r)
		}
		wait := p.infraWait(try)
		r.Diagnosis = fmt.Sprintf("try %d of %d: %s; trying again in %s", try, tries, r.Diagnosis, wait)
		ar.checks = append(ar.checks, r)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			interrupted(ctx, ar)
			return false
		case <-t.C:
		}
	}
}

// infraWait is the backoff after the n-th infrastructure failure in a row:
// InfraBackoff, doubled each time, at most MaxInfraBackoff.
func (p *common) infraWait(n int) time.Duration {
	wait := p.cfg.InfraBackoff << min(max(n-1, 0), 20)
	if wait > p.cfg.MaxInfraBackoff || wait <= 0 {
		wait = p.cfg.MaxInfraBackoff
	}
	return wait
}

// expandedCompletion is the completion contract the runner applies to t: t's,
// normalised (contract.Completion.Normalized: the inferred type, the default path,
// max_attempts, timeout and verify_timeout), with {task_id} expanded in its paths
// (the output path, the checklist: contract.Completion.Expanded), as the checks
// resolve them and their diagnoses and the evaluator name them. It is the runner's
// one reading of the completion's effective values, so that a contract stored
// without its defaults gets the contract's (issue #32), never defaults of the
// runner's own.
func expandedCompletion(t *models.Task) contract.Completion {
	return t.Contract.Completion.Normalized().Expanded(t.ID)
}

// effectiveReview is the review rv the runner applies: normalised
// (contract.Contract.Normalized: max_rounds and when defaulted, canonical case), nil
// when there is none. Like expandedCompletion, the runner's one reading of the
// review's effective values.
func effectiveReview(rv *contract.Review) *contract.Review {
	if rv == nil {
		return nil
	}
	return contract.Contract{Review: rv}.Normalized().Review
}

// interrupted turns a cancelled task context (Stop after the grace period, a lost
// lease) into an infrastructure failure naming the cause.
func interrupted(ctx context.Context, ar *attemptRun) bool {
	if ctx.Err() == nil && !ar.res.Cancelled {
		return false
	}
	cause := context.Cause(ctx)
	if cause == nil {
		cause = context.Canceled
	}
	ar.infra(fmt.Sprintf("%v: the attempt was interrupted and is not counted against the worker", cause), cause)
	return true
}

// mechanicalCheck applies the file / signal / none contract (cp, its paths expanded) to the
// output path, resolved again now that the worker has finished: it may have made the
// path, or a directory on it, a symbolic link out of the workspace, which is its
// failure, with a diagnosis naming the path and the link.
func mechanicalCheck(cp contract.Completion, ar *attemptRun) models.CheckResult {
	if ar.outAbs == "" {
		return checks.Mechanical(cp, "", nil)
	}
	start := time.Now()
	abs, err := ar.ws.Resolve(cp.Path)
	if err != nil {
		return models.CheckResult{Stage: models.StageMechanical, Verdict: models.VerdictFail,
			Diagnosis:  describeEscape(ar, cp.Path, err) + "; the output must be a regular file inside the workspace",
			DurationMS: time.Since(start).Milliseconds()}
	}
	ar.outAbs = abs
	return checks.Mechanical(cp, abs, ar.ws.ReadFile)
}

// verify runs the contract's verify commands and its immediate criteria (deferred
// ones run later, with the integrated result), with the project rules' activity
// commands.
func (p *checker) verify(ctx context.Context, tr *taskRun, ar *attemptRun) models.CheckResult {
	t := &tr.task
	cp := expandedCompletion(t)
	var crit []contract.Criterion
	var index []int // crit[i] is the contract's criterion index[i]
	for i, c := range t.Contract.Verification.Criteria {
		if c.Timing != contract.TimingDeferred {
			crit, index = append(crit, c), append(index, i)
		}
	}
	dir := verifyDir(ar)
	req := checks.VerifyRequest{Dir: dir, Commands: cp.Verify, Criteria: crit, Timeout: cp.VerifyTimeout.Duration}
	if len(cp.Verify) > 0 || len(crit) > 0 { // else nothing runs: no environment to make
		rules, err := p.rules(ctx)
		if err != nil {
			return models.CheckResult{Stage: models.StageVerify, Verdict: models.VerdictError,
				Diagnosis: "reading the project rules failed: " + err.Error()}
		}
		run, err := p.judging.judged(tr, ar, dir, rules.Stacks)
		if err != nil {
			return models.CheckResult{Stage: models.StageVerify, Verdict: models.VerdictError,
				Diagnosis: "preparing the judge's environment failed: " + err.Error()}
		}
		defer run.close()
		req.ActivityCommands, req.Env, req.Confine, req.ResultsDir = rules.Activities, run.env, run.confine, run.resultsDir
	}
	if ar.judge != nil {
		req.Results = map[int]contract.TestResults{}
		for i, j := range index {
			if res, ok := ar.judge.results[j]; ok {
				req.Results[i] = res
			}
		}
		ar.judge.withhold(&req, t.Contract.Verification.HeldOut)
		req.Expect = ar.judge.canaries.expect()
	}
	res, results, runs := checks.VerifyWith(ctx, req)
	ar.criteria = results
	if ar.judge != nil {
		for i := range runs {
			runs[i].Criterion = index[runs[i].Criterion]
		}
	}
	return ar.judgeVerdict(res, runs)
}

// rulesTTL bounds how long the pool reuses the project rules it read. Saving them
// (rules.changed) drops the copy as soon as the event reaches the pool; the bound covers
// writers it does not hear from (another process on SQLite).
const rulesTTL = time.Second

// evaluate asks the evaluator when the contract (cp, its paths expanded) has
// `evaluate`. No verdict (an outage, a malformed reply, no evaluator configured) is an
// error verdict, an infrastructure failure: the task never passes on it.
func (p *checker) evaluate(ctx context.Context, tr *taskRun, ar *attemptRun, cp contract.Completion) models.CheckResult {
	t := &tr.task
	start := time.Now()
	if strings.TrimSpace(cp.Evaluate) == "" {
		return models.CheckResult{Stage: models.StageEvaluation, Verdict: models.VerdictSkipped, Diagnosis: "the contract has no evaluate criteria"}
	}
	out, err := attemptArtifact(ar)
	if err != nil {
		return models.CheckResult{Stage: models.StageEvaluation, Verdict: models.VerdictError,
			Diagnosis: "reading the output for evaluation: " + err.Error(), DurationMS: time.Since(start).Milliseconds()}
	}
	v, err := p.cfg.Evaluator.Evaluate(ctx, evaluator.Request{
		Brief:        "Task: " + t.Title + "\n\n" + t.Brief,
		Evaluate:     cp.Evaluate,
		Completion:   cp,
		Output:       out,
		ContractHash: t.Contract.Hash(),
	})
	p.addEvaluatorUsage(ctx, ar, v.Usage) // a failed call may have been billed too
	r := models.CheckResult{Stage: models.StageEvaluation, DurationMS: time.Since(start).Milliseconds()}
	switch {
	case err != nil:
		r.Verdict, r.Diagnosis = models.VerdictError, "the evaluator gave no verdict (the task does not pass without one): "+err.Error()
	case v.Pass:
		r.Verdict, r.Diagnosis = models.VerdictPass, v.Diagnosis
	default:
		r.Verdict, r.Diagnosis = models.VerdictFail, v.Diagnosis
	}
	return r
}

// attemptArtifact returns what the evaluator and a reviewer judge: the output file (its head
// and tail when large), or for type none the tail of what the worker printed.
func attemptArtifact(ar *attemptRun) ([]byte, error) {
	if ar.outAbs == "" {
		return ar.res.Tail, nil
	}
	f, err := ar.ws.Open(ar.outAbs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readBounded(f, maxArtifactBytes)
}

// readBounded reads a file whole when it has at most max bytes, else its first and
// last max/2 bytes around a marker, so memory stays bounded whatever a worker wrote.
func readBounded(f *os.File, max int) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() <= int64(max) {
		return io.ReadAll(io.LimitReader(f, int64(max)))
	}
	half := max / 2
	head := make([]byte, half)
	if _, err := io.ReadFull(f, head); err != nil {
		return nil, err
	}
	tail := make([]byte, half)
	if _, err := f.ReadAt(tail, fi.Size()-int64(half)); err != nil && err != io.EOF {
		return nil, err
	}
	marker := fmt.Sprintf("\n[… %d bytes omitted …]\n", fi.Size()-int64(2*half))
	return append(append(head, marker...), tail...), nil
}

// outputHashOf is the SHA-384 (hex) of the verified output: the output file, or for type
// none everything the worker printed.
func outputHashOf(cp contract.Completion, ar *attemptRun) string {
	if ar.outAbs == "" {
		if ar.stream == nil {
			return ""
		}
		return hex.EncodeToString(ar.stream.Sum(nil))
	}
	f, err := ar.ws.Open(ar.outAbs)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha512.New384()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}
