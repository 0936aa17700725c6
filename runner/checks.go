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
func (p *Pool) check(ctx context.Context, tr *taskRun, ar *attemptRun) {
	t := &tr.task
	cp := t.Contract.Completion
	if p.interrupted(ctx, ar) {
		return
	}
	var se *worker.StartError
	var oe *worker.OutputError
	switch {
	case errors.As(ar.runErr, &se):
		ar.infra("the worker command could not be started: "+se.Error(), se)
		return
	case errors.As(ar.runErr, &oe):
		ar.infra("the worker's log could not be written, so its evidence is incomplete: "+oe.Error(), oe)
		return
	case ar.runErr != nil:
		ar.infra("running the worker failed: "+ar.runErr.Error(), ar.runErr)
		return
	}
	timeout := cp.Timeout.Duration
	if timeout <= 0 {
		timeout = models.DefaultTimeout
	}
	proc := checks.Process(ar.res.ExitCode, ar.res.TimedOut, timeout)
	if ar.res.Signal != "" && proc.Verdict == models.VerdictFail && !ar.res.TimedOut {
		proc.Diagnosis = fmt.Sprintf("worker was killed by %s before it exited (it crashed or was killed); it must exit with status 0 when the work is done", ar.res.Signal)
	}
	if !ar.record(proc) {
		return
	}
	advisory := t.Contract.Verification.Type == models.VerifyAdvisory
	if advisory {
		ar.outputHash = p.outputHash(cp, ar)
		ar.outcome = models.OutcomePassed
		return
	}
	output := string(ar.res.Tail)
	if !ar.record(checks.Contradiction(output, checks.ClaimTokens(cp.DoneToken), p.cfg.ContradictionPhrases)) {
		return
	}
	if !ar.record(checks.DoneToken(output, cp.DoneToken)) {
		return
	}
	if !ar.record(p.mechanical(cp, t.Contract.OutputPath(t.ID), ar)) {
		return
	}
	if !ar.record(p.verify(ctx, tr, ar)) || p.interrupted(ctx, ar) {
		return
	}
	skip := t.Contract.Verification.Type == models.VerifySkip
	if !skip {
		if !ar.record(checks.Workspace(ctx, ar.ws.Dir, cp.Clean, cp.Checklist, ar.ws.Resolve, p.confinement(tr, ar, &tr.agent))) || p.interrupted(ctx, ar) {
			return
		}
		if !p.evaluate(ctx, tr, ar) || p.interrupted(ctx, ar) {
			return
		}
		if !p.review(ctx, tr, ar) || p.interrupted(ctx, ar) {
			return
		}
	}
	ar.outputHash = p.outputHash(cp, ar)
	ar.outcome = models.OutcomePassed
}

// interrupted turns a cancelled task context (Stop after the grace period, a lost
// lease) into an infrastructure failure naming the cause.
func (p *Pool) interrupted(ctx context.Context, ar *attemptRun) bool {
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

// mechanical applies the file / signal / none contract to the output path, resolved
// again now that the worker has finished: it may have replaced a directory with a
// symlink pointing outside the workspace, which counts as missing output.
func (p *Pool) mechanical(cp models.Completion, rel string, ar *attemptRun) models.CheckResult {
	if ar.outAbs == "" {
		return checks.Mechanical(cp, "", nil)
	}
	start := time.Now()
	if _, err := ar.ws.Resolve(rel); err != nil {
		return models.CheckResult{Stage: models.StageMechanical, Verdict: models.VerdictFail,
			Diagnosis:  fmt.Sprintf("output path %s now leads outside the workspace (%v); write a regular file there", rel, err),
			DurationMS: time.Since(start).Milliseconds()}
	}
	return checks.Mechanical(cp, ar.outAbs, nil)
}

// verify runs the contract's verify commands and its immediate criteria (deferred
// ones run later, with the integrated result), with the project rules' activity
// commands.
func (p *Pool) verify(ctx context.Context, tr *taskRun, ar *attemptRun) models.CheckResult {
	t := &tr.task
	cp := t.Contract.Completion
	var crit []models.Criterion
	for _, c := range t.Contract.Verification.Criteria {
		if c.Timing != models.TimingDeferred {
			crit = append(crit, c)
		}
	}
	var activities map[string]string
	if len(crit) > 0 {
		rules, err := p.rules(ctx)
		if err != nil {
			return models.CheckResult{Stage: models.StageVerify, Verdict: models.VerdictError,
				Diagnosis: "reading the project rules failed: " + err.Error()}
		}
		activities = rules.Activities
	}
	res, results := checks.Verify(ctx, ar.ws.Dir, cp.Verify, crit, activities, cp.VerifyTimeout.Duration, p.checkEnv(tr, ar), p.confinement(tr, ar, &tr.agent))
	ar.criteria = results
	return res
}

// rulesTTL bounds how long the pool reuses the project rules it read. Saving them
// (rules.changed) drops the copy as soon as the event reaches the pool; the bound covers
// writers it does not hear from (another process on SQLite).
const rulesTTL = time.Second

// rules returns the project rules, read at most once per rulesTTL unless another
// writer's events arrived since.
func (p *Pool) rules(ctx context.Context) (models.ProjectRules, error) {
	p.rulesMu.Lock()
	gen, cached, at := p.rulesGen, p.rulesVal, p.rulesAt
	p.rulesMu.Unlock()
	if cached != nil && time.Since(at) < rulesTTL {
		return *cached, nil
	}
	at = time.Now()
	r, err := p.svc.Rules(ctx)
	if err != nil {
		return r, err
	}
	p.rulesMu.Lock()
	if p.rulesGen == gen {
		p.rulesVal, p.rulesAt = &r, at
	}
	p.rulesMu.Unlock()
	return r, nil
}

// forgetRules drops the cached project rules: an event from another writer may have
// been rules.changed.
func (p *Pool) forgetRules() {
	p.rulesMu.Lock()
	p.rulesGen++
	p.rulesVal = nil
	p.rulesMu.Unlock()
}

// checkEnv is the environment of verify commands: the worker's minimal environment
// and GOFLAGS, the task facts, and the worker agent's home and the attempt's temp dir.
// Go's caches live in that home (warm from the agent's earlier tasks), never the
// runner's own: a verify command runs the worker's code, which must not write into a
// cache the runner builds from.
func (p *Pool) checkEnv(tr *taskRun, ar *attemptRun) []string {
	env := append(worker.BaseEnv(), worker.Inherit("GOFLAGS")...)
	if p.cfg.Sandbox == nil || !p.cfg.Sandbox.Enabled() {
		env = append(env, worker.Inherit("GOPATH", "GOCACHE", "GOMODCACHE")...)
	}
	env = append(env, p.taskEnv(tr, ar)...)
	return append(env, p.confinedEnv(ar, &tr.agent)...)
}

// evaluate asks the evaluator when the contract has `evaluate`. No verdict (an
// outage, a malformed reply, no evaluator configured) is an infrastructure failure:
// the task never passes on it.
func (p *Pool) evaluate(ctx context.Context, tr *taskRun, ar *attemptRun) bool {
	t := &tr.task
	cp := t.Contract.Completion
	start := time.Now()
	if strings.TrimSpace(cp.Evaluate) == "" {
		return ar.record(models.CheckResult{Stage: models.StageEvaluation, Verdict: models.VerdictSkipped, Diagnosis: "the contract has no evaluate criteria"})
	}
	out, err := p.artifact(ar)
	if err != nil {
		return ar.record(models.CheckResult{Stage: models.StageEvaluation, Verdict: models.VerdictError,
			Diagnosis: "reading the output for evaluation: " + err.Error(), DurationMS: time.Since(start).Milliseconds()})
	}
	v, err := p.cfg.Evaluator.Evaluate(ctx, evaluator.Request{
		Brief:        "Task: " + t.Title + "\n\n" + t.Brief,
		Evaluate:     cp.Evaluate,
		Completion:   cp,
		Output:       out,
		ContractHash: t.Contract.Hash(),
	})
	r := models.CheckResult{Stage: models.StageEvaluation, DurationMS: time.Since(start).Milliseconds()}
	switch {
	case err != nil:
		r.Verdict, r.Diagnosis = models.VerdictError, err.Error()
		ar.checks = append(ar.checks, r)
		ar.infra("the evaluator gave no verdict (the task does not pass without one): "+err.Error(), err)
		return false
	case v.Pass:
		r.Verdict, r.Diagnosis = models.VerdictPass, v.Diagnosis
	default:
		r.Verdict, r.Diagnosis = models.VerdictFail, v.Diagnosis
	}
	return ar.record(r)
}

// artifact returns what the evaluator and a reviewer judge: the output file (its head
// and tail when large), or for type none the tail of what the worker printed.
func (p *Pool) artifact(ar *attemptRun) ([]byte, error) {
	if ar.outAbs == "" {
		return ar.res.Tail, nil
	}
	return readBounded(ar.outAbs, maxArtifactBytes)
}

// readBounded reads a file whole when it has at most max bytes, else its first and
// last max/2 bytes around a marker, so memory stays bounded whatever a worker wrote.
func readBounded(path string, max int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
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

// outputHash is the SHA-384 (hex) of the verified output: the output file, or for type
// none everything the worker printed.
func (p *Pool) outputHash(cp models.Completion, ar *attemptRun) string {
	if ar.outAbs == "" {
		if ar.stream == nil {
			return ""
		}
		return hex.EncodeToString(ar.stream.Sum(nil))
	}
	f, err := os.Open(ar.outAbs)
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
