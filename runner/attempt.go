package runner

import (
	"context"
	"crypto/sha512"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/gateway"
	"github.com/countersign/countersign/runner/worker"
	"github.com/countersign/countersign/runner/workspace"
)

// Environment variables every worker gets. They are the only way task data reaches
// the worker besides the brief on stdin: never part of the command string.
const (
	EnvTaskID     = "COUNTERSIGN_TASK_ID"
	EnvOutputPath = "COUNTERSIGN_OUTPUT_PATH" // absolute, confined to the workspace; empty for type none
	EnvWorkspace  = "COUNTERSIGN_WORKSPACE"
	EnvAttempt    = "COUNTERSIGN_ATTEMPT"
	EnvBriefFile  = "COUNTERSIGN_BRIEF_FILE"
	// EnvToken is the attempt's own bearer token (with COUNTERSIGN_URL): it acts as
	// the worker agent on its task only, and is revoked when the worker exits.
	EnvToken = "COUNTERSIGN_TOKEN"
)

// attemptRun is one attempt in the making: what was prepared, what the worker did and
// what the checks said.
type attemptRun struct {
	num      int
	history  []models.Attempt // the task's attempts before this one
	previous *models.Attempt  // the failure this attempt revises
	start    time.Time
	// approach is the triage's new approach when this is the one extra attempt a
	// triage gave the task (triage.go); "" otherwise.
	approach string

	ws         *workspace.Workspace
	tmp        string                   // the attempt's private temp dir, its TMPDIR
	facts      *contract.WorkspaceFacts // what the workspace showed, when the contract waited for it
	token      string                   // the attempt's bearer token (COUNTERSIGN_TOKEN); "" without an API URL
	tokenID    int64
	outAbs     string // resolved output path; "" for type none
	outProblem string // why the output path cannot be used, when it cannot
	unlinked   string // a link out of the workspace an earlier attempt left on the output path, removed
	brief      string
	row        *models.Attempt // stored once the attempt has begun

	res    worker.Result
	runErr error
	stream hash.Hash // SHA-384 of everything the worker printed

	checks      []models.CheckResult
	criteria    []models.CriterionResult
	outcome     string
	stage       string
	diagnosis   string
	cause       error // for infrastructure failures: why (ErrStopping, ErrLeaseLost, …)
	outputHash  string
	reviewAgain bool // a failed review round with rounds left: a fix task, not charged
	reviewRun        // the artifact review's round (review_fix.go)
	// agentExit is the worker's exit status when its own command could not run (126
	// or 127): the agent's failure, which pauses it (see agentCommandFailed).
	agentExit int
	// layerExhausted says a check layer after the worker gave no verdict on any of its
	// tries (see layer): the task blocks at once, without running the worker again.
	layerExhausted bool
	// judge is the judge's view of this attempt: protected paths, base, floor.
	judge *judgeRun
	deliv *deliverableRun // a task without a git workspace: its base and what was kept (deliverable.go)
	// commit is the verified commit on the task's branch (worktree tasks that pass).
	commit string
	// noted says the commit's attestation was attached as a git note (noteVerified).
	noted bool
	// fingerprint is what the passed attempt's verification covers (fingerprint.go).
	fingerprint *models.Fingerprint
	// question is what the run asked a person (question.go); the outcome is then
	// models.OutcomeQuestion.
	question string
	// impossible is the reason the worker gave for saying the task cannot be done as
	// specified (impossible.go); the outcome is then models.OutcomeImpossible.
	impossible string
	// stepConflict is set when the task's dependencies' verified commits conflict: it
	// is blocked with a fix task instead of starting.
	stepConflict *models.StepConflict
	// reserve is what the attempt holds of its budgets while it runs.
	reserve models.BudgetDecision
	// usage is what the attempt used: what the gateway metered, with the worker's
	// report beside it, or the report alone (nil: nothing).
	usage *models.Usage
	// lease is the attempt's model gateway credential while its worker runs.
	lease *gateway.Lease
	// net is the attempt's egress through its runs' private networks.
	net attemptNet
	// result is a stream-json run's final result text: its output for type none.
	result string
}

func (ar *attemptRun) fail(stage, diagnosis string) {
	ar.outcome, ar.stage, ar.diagnosis = models.OutcomeFailed, stage, diagnosis
}

func (ar *attemptRun) infra(diagnosis string, cause error) {
	ar.outcome, ar.stage, ar.diagnosis, ar.cause = models.OutcomeInfra, models.StageInfra, diagnosis, cause
}

// decision is what the task's goroutine does after an attempt.
type decision struct {
	done   bool          // the task left this runner's hands (passed, blocked, lost, released)
	wait   time.Duration // before the next attempt
	triage bool          // the attempts ran out on a work failure: ask the triage first
}

// runTask runs attempts of a claimed task until it passes, blocks, is lost or the
// pool stops.
func (p *attemptRunner) runTask(tr *taskRun) {
	ctx := tr.ctx
	for first := true; ; first = false {
		if !first && p.isStopping() {
			// No new attempt once Stop was called: another runner continues.
			p.releaseLease(tr)
			return
		}
		tr.settled.Store(false)
		var d decision
		if triagePending(&tr.task) {
			d = p.settling.triage(ctx, tr) // a runner that died left it asking
		} else {
			d = p.attempt(ctx, tr)
		}
		if d.triage {
			d = p.settling.triage(ctx, tr)
		}
		tr.fresh = false
		if d.done {
			return
		}
		if d.wait > 0 {
			t := time.NewTimer(d.wait)
			select {
			case <-ctx.Done():
				t.Stop()
			case <-t.C:
			}
		}
		if ctx.Err() != nil {
			if !errors.Is(context.Cause(ctx), ErrLeaseLost) {
				p.releaseLease(tr)
			}
			return
		}
	}
}

// attempt makes one attempt: prepare, record its start, run the worker, check, and
// record the outcome with the state change in one transaction. The first attempt of a
// claim was usually prepared and begun by the claim itself.
func (p *attemptRunner) attempt(ctx context.Context, tr *taskRun) decision {
	ar := tr.next
	tr.next = nil
	if ar == nil {
		ar = p.newAttempt(tr)
		missing, err := p.prepareReady(ctx, tr, ar, func() (models.ProjectRules, error) { return p.rules(ctx) })
		if err != nil {
			ar.infra("preparing the attempt failed: "+err.Error(), err)
			return p.settle(tr, ar)
		}
		if len(missing) > 0 {
			p.tmpDirs.release(ar.tmp)
			return p.notReady(ctx, tr, ar, missing)
		}
		if d, ok := p.begin(ctx, tr, ar); !ok {
			p.tmpDirs.release(ar.tmp)
			return d
		}
	} else if ar.outcome != "" {
		// The claim could not prepare it.
		return p.settle(tr, ar)
	}
	defer p.tmpDirs.release(ar.tmp)
	if p.cfg.Procs != nil {
		// A process of an earlier attempt of this task (a runner that died here) must
		// not write beside this one.
		if _, err := p.cfg.Procs.ReapTask(ctx, tr.task.ID); err != nil {
			ar.infra("reaping an earlier attempt's processes failed: "+err.Error(), err)
			return p.settle(tr, ar)
		}
	}
	if err := p.judging.prepareJudge(ctx, tr, ar); err != nil {
		if !interrupted(ctx, ar) {
			ar.infra("preparing the judge failed: "+err.Error(), err)
		}
		return p.settle(tr, ar)
	}
	p.prepareDeliverable(tr, ar)
	if ar.reviewOnly {
		p.checker.reviewAlone(ctx, tr, ar) // the next review round: the worker does not run
	} else {
		p.execute(ctx, tr, ar)
		if !noteImpossible(&tr.task, ar) && !noteQuestion(ar) {
			p.checker.check(ctx, tr, ar)
		}
	}
	p.lander.commitVerified(ctx, tr, ar)
	p.keepDeliverable(ctx, tr, ar)
	p.takeFingerprint(ctx, tr, ar)
	d := p.settle(tr, ar)
	p.lander.noteVerified(ctx, tr, ar)
	p.lander.pushVerified(ctx, tr, ar)
	return d
}

// newAttempt starts the next attempt of tr's task, numbered after the attempts the
// pool knows of.
func (p *attemptRunner) newAttempt(tr *taskRun) *attemptRun {
	attempts := tr.attempts[:len(tr.attempts):len(tr.attempts)]
	ar := &attemptRun{num: len(attempts) + 1, history: attempts, previous: lastFailure(attempts), start: time.Now(),
		approach: triageApproach(&tr.task, attempts)}
	ar.reviewOnly = reviewOnlyNext(tr)
	return ar
}

// prepareReady prepares the attempt and, for the first attempt of a round (tr.fresh),
// checks its readiness: missing lists what keeps the contract from being checked, in
// which case no attempt may begin. An agent workdir that cannot be used is missing
// too, not an error: no worker can do anything about it.
func (p *attemptRunner) prepareReady(ctx context.Context, tr *taskRun, ar *attemptRun, rules func() (models.ProjectRules, error)) (missing []string, err error) {
	err = p.prepare(ctx, tr, ar, rules)
	var sc *stepConflictError
	if errors.As(err, &sc) {
		// No worker can start on a base that does not exist: a fix task comes first.
		ar.stepConflict = &sc.c
		return []string{sc.Error()}, nil
	}
	if tr.fresh && ar.ws == nil && models.ErrorCode(err) == models.EINVALID {
		return []string{"the agent's workspace: " + err.Error()}, nil
	}
	if err != nil {
		return nil, err
	}
	if !tr.fresh {
		if ar.outProblem != "" {
			return nil, errors.New(ar.outProblem)
		}
		return nil, nil
	}
	return p.judging.readiness(tr, ar, rules)
}

// prepare lays out the workspace, completes a generated contract with the criteria of
// the workspace's stacks, resolves the output path and writes the brief. An output
// path that cannot be used is noted in ar.outProblem, for readiness to report (or for
// a revision, an error).
func (p *attemptRunner) prepare(ctx context.Context, tr *taskRun, ar *attemptRun, rules func() (models.ProjectRules, error)) error {
	t := &tr.task
	req := workspace.Request{TaskID: t.ID, Attempt: ar.num, AgentWorkdir: tr.agent.Workdir, Worktree: tr.agent.Worktree}
	if tr.agent.Worktree {
		var err error
		if req.Branch, req.Base, err = p.lander.branchFor(ctx, tr); err != nil {
			return err
		}
	}
	ws, err := p.prepareWorkspace(ctx, tr, req)
	if err != nil {
		return err
	}
	ar.ws = ws
	if err := p.conf.prepareConfinement(tr, ar); err != nil {
		return err
	}
	if err := p.completeContract(tr, ar, rules); err != nil {
		return err
	}
	if rel := t.Contract.OutputPath(t.ID); rel != "" {
		p.prepareOutput(ar, rel)
	}
	ar.brief = buildBrief(briefInput{task: t, attempt: ar.num, outputAbs: ar.outAbs, previous: ar.previous,
		unlinked: ar.unlinked, approach: ar.approach})
	return os.WriteFile(ws.BriefPath(ar.num), []byte(ar.brief), 0o640)
}

// completeContract adds to a generated contract that waits for its workspace the
// criteria of the stacks the workspace shows (go.mod, package.json, pyproject.toml,
// …), in memory, so that readiness and the brief see them; recordStart (or the
// readiness block) stores them before any worker starts. A contract that waits for
// nothing is left alone.
func (p *attemptRunner) completeContract(tr *taskRun, ar *attemptRun, rules func() (models.ProjectRules, error)) error {
	c := &tr.task.Contract
	if w := c.Verification.Workspace; w != contract.WorkspacePending && w != contract.WorkspacePendingCommands {
		return nil
	}
	r, err := rules()
	if err != nil {
		return err
	}
	facts, err := contract.DetectWorkspace(ar.ws.Dir, nil, r.Tools()...)
	if err != nil {
		return fmt.Errorf("reading the workspace's stacks: %w", err)
	}
	c.AddStackCriteria(r.Rules, facts)
	ar.facts = &facts
	return nil
}

// fixContract stores, in tx, the stack criteria completeContract added, with their
// contract.completed event; a no-op when it added none.
func (p *common) fixContract(ctx context.Context, tx models.Tx, t *models.Task, ar *attemptRun) error {
	if ar == nil || ar.facts == nil {
		return nil
	}
	return p.svc.Attempts.FixStackCriteria(ctx, tx, p.runner, t, *ar.facts)
}

// prepareOutput resolves the output path rel inside the workspace and makes its
// directory, so the worker is told where to write and can. A symbolic link out of the
// workspace that an earlier attempt of the task left on the path is that worker's
// doing, already charged to it (the mechanical check failed on it): it is removed, the
// link alone, so this attempt can write there. Whatever else keeps the path from use
// goes to ar.outProblem.
func (p *attemptRunner) prepareOutput(ar *attemptRun, rel string) {
	abs, err := ar.ws.Resolve(rel)
	if err != nil && len(ar.history) > 0 {
		if link, target := ar.ws.Escape(rel); link != "" {
			if rmErr := os.Remove(link); rmErr == nil {
				ar.unlinked = fmt.Sprintf("%s (a link to %s)", relTo(ar.ws.Dir, link), target)
				abs, err = ar.ws.Resolve(rel)
			}
		}
	}
	if err != nil {
		ar.outProblem = describeEscape(ar, rel, err)
		return
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o750); err != nil {
		ar.outProblem = fmt.Sprintf("the output directory %s cannot be made: %v", filepath.Dir(abs), err)
		return
	}
	ar.outAbs = abs
}

// describeEscape says why the output path rel cannot be used, naming the link that
// leads out of the workspace when there is one.
func describeEscape(ar *attemptRun, rel string, err error) string {
	if link, target := ar.ws.Escape(rel); link != "" {
		return fmt.Sprintf("the output path %s leads outside the workspace: %s is a symbolic link to %s", rel, relTo(ar.ws.Dir, link), target)
	}
	return fmt.Sprintf("the output path %s cannot be used: %v", rel, err)
}

// relTo names path relative to dir when it lies inside it.
func relTo(dir, path string) string {
	if r, err := filepath.Rel(dir, path); err == nil && filepath.IsLocal(r) {
		return r
	}
	return path
}

// begin records the attempt as running, after checking the lease is still ours and
// that a budget leaves room for it. When it does not start, the decision says what the
// task's goroutine does: wait for running attempts' reservations to settle, or stop.
func (p *attemptRunner) begin(ctx context.Context, tr *taskRun, ar *attemptRun) (decision, bool) {
	lost := false
	var stop error
	err := p.inTx(ctx, func(tx models.Tx) error {
		t, err := tx.LockTask(ctx, tr.task.ID)
		if err != nil {
			return err
		}
		if t.State != models.TaskInProgress || t.LeaseOwner != p.cfg.RunnerID {
			lost = true
			return nil
		}
		err = p.recordStart(ctx, tx, tr, ar)
		if errors.Is(err, errBudgetWait) || errors.Is(err, errBudgetSpent) {
			stop, err = err, nil // the task's block, if any, is committed
		}
		return err
	})
	switch {
	case err != nil:
		p.log.Warn("recording the attempt's start failed; releasing the task", "task_id", tr.task.ID, "err", err)
		p.releaseLease(tr)
		return decision{done: true}, false
	case lost:
		p.log.Info("task no longer leased to this runner; not starting", "task_id", tr.task.ID)
		return decision{done: true}, false
	case errors.Is(stop, errBudgetWait):
		tr.budgetWaits++
		return decision{wait: budgetWait(tr.budgetWaits)}, false
	case stop != nil:
		return decision{done: true}, false
	}
	tr.budgetWaits = 0
	return decision{}, true
}

// recordStart stores the attempt as running, with its attempt.started event and what
// it reserved of its budgets, in tx. A budget with no room left for it is
// errBudgetWait (running attempts hold the rest) or errBudgetSpent (the task was
// blocked in tx); nothing is recorded then.
func (p *attemptRunner) recordStart(ctx context.Context, tx models.Tx, tr *taskRun, ar *attemptRun) error {
	reserve, err := p.reserveBudget(ctx, tx, tr)
	if err != nil {
		return err
	}
	if err := p.fixContract(ctx, tx, &tr.task, ar); err != nil {
		return err
	}
	if err := p.lander.recordBranch(ctx, tx, tr, ar); err != nil {
		return err
	}
	t := &tr.task
	row := &models.Attempt{TaskID: t.ID, Number: ar.num, AgentID: tr.agent.ID, RunnerID: p.cfg.RunnerID,
		Outcome: models.OutcomeRunning, LogPath: ar.ws.LogPath(ar.num), Brief: ar.brief, StartedAt: ar.start.UTC(), Triage: ar.approach != "",
		ReservedUSD: reserve.ReserveUSD, ReservedTokens: reserve.ReserveTokens}
	if err := tx.CreateAttempt(ctx, row); err != nil {
		return err
	}
	ar.row, ar.reserve = row, reserve
	if p.cfg.APIURL != "" {
		// The worker reaches the API as itself, on its own task only, for as long as
		// this run lasts: no long-lived token ever sits in its command. Issued here, in
		// the transaction that records the start, it costs no round trip of its own.
		secret, id, err := p.svc.Tokens.IssueAttemptTokenTx(ctx, tx, tr.agent.ID, t.ID, ar.num, attemptTimeout(t)+attemptTokenMargin)
		if err != nil {
			return fmt.Errorf("issuing the attempt's token: %w", err)
		}
		ar.token, ar.tokenID = secret, id
	}
	return p.event(ctx, tx, "attempt.started", t, map[string]any{
		"attempt": ar.num, "agent": tr.agent.Name, "runner_id": p.cfg.RunnerID, "revision": ar.previous != nil,
	})
}

// execute runs the worker with the brief on stdin and the task facts in its
// environment.
func (p *attemptRunner) execute(ctx context.Context, tr *taskRun, ar *attemptRun) {
	t := &tr.task
	timeout := attemptTimeout(t)
	ar.stream = sha512.New384()
	onLog := p.cfg.OnLog
	spec := worker.Spec{
		Command:   tr.agent.Command,
		Dir:       ar.ws.Dir,
		Stdin:     strings.NewReader(ar.brief),
		Env:       slices.Concat(p.conf.taskEnv(tr, ar), p.conf.confinedEnv(ar, &tr.agent), p.conf.usageEnv(tr, ar)),
		Timeout:   timeout,
		KillGrace: p.cfg.KillGrace,
		LogPath:   ar.ws.LogPath(ar.num),
		Confine:   p.conf.confinement(tr, ar, &tr.agent),
		OnOutput: func(chunk []byte) {
			ar.stream.Write(chunk)
			if onLog != nil {
				onLog(t.ID, chunk)
			}
		},
	}
	if !tr.dispatched && p.cfg.Observer != nil {
		// Measured just before the fork: everything but the exec itself, which a
		// bare fork/exec of the same worker pays too.
		p.cfg.Observer.Dispatched(time.Since(tr.readyAt))
	}
	tr.dispatched = true
	if ar.token != "" {
		spec.Env = append(spec.Env, EnvToken+"="+ar.token)
		defer p.revokeAttemptToken(ar.tokenID, t.ID)
	}
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	spec.Env = append(spec.Env, p.conf.openGateway(tr, ar, cancel)...)
	defer p.conf.closeGateway(ar) // on an early return; a second call does nothing
	if p.conf.privateNetwork() {
		spec.Env = append(spec.Env, networkEnv()...)
	}
	var stream *jsonStream
	if streamsJSON(tr.agent.Command) {
		var err error
		if stream, err = p.startJSONStream(ctx, &spec, ar, spec.OnOutput, cancel); err != nil {
			ar.infra("preparing the worker's stream-json log failed: "+err.Error(), err)
			return
		}
		spec.OnOutput = nil // stderr reaches the log file of its own; the live log shows the rendering
	}
	ar.res, ar.runErr = worker.Run(rctx, spec)
	ar.usage = readUsageFile(ar.tmp)
	if stream != nil {
		stream.finish(ar)
	}
	// After the report is read, so that the meter's usage goes beside it.
	refusedBy := p.conf.closeGateway(ar)
	switch cause := context.Cause(rctx); {
	case errors.Is(cause, errBudgetOverrun):
		ar.fail(models.StageBudget, "the worker was stopped: "+cause.Error())
	case refusedBy != "":
		// The refusal's cancel runs on its own goroutine; a worker that exits as soon
		// as it hears "no" can end before it. The refusal, not the timing, decides.
		ar.fail(models.StageBudget, fmt.Sprintf("the worker was stopped: %v: the model gateway refused a call past what the attempt reserved (%s)", errBudgetOverrun, refusedBy))
	}
}

// attemptTimeout is how long the worker (or the reviewer) of t may run: the
// contract's timeout, its default when it sets none.
func attemptTimeout(t *models.Task) time.Duration {
	return expandedCompletion(t).Timeout.Duration
}

// attemptBudget is how many attempts t's contract gives its work: max_attempts, its
// default when it sets none (see expandedCompletion).
func attemptBudget(t *models.Task) int {
	return expandedCompletion(t).MaxAttempts
}

// attemptTokenMargin is how long an attempt token outlives the attempt's timeout, so
// that the token of a runner that died expires soon after its worker would have.
const attemptTokenMargin = time.Minute

// revokeAttemptToken ends the attempt's token once its worker has exited, before
// anything else runs in its workspace. Attempts that end together share one statement
// (see groupCommit). A failure is logged: the token expires on its own shortly after.
func (p *attemptRunner) revokeAttemptToken(id, taskID int64) {
	if err := p.revoker.submit(id); err != nil {
		p.log.Warn("revoking an attempt token failed; it expires on its own", "task_id", taskID, "token_id", id, "err", err)
	}
}

// revokeAttemptTokens revokes a batch of attempt tokens (see revokeAttemptToken).
func (p *attemptRunner) revokeAttemptTokens(ids []int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return p.svc.Tokens.RevokeAttemptTokens(ctx, ids)
}

// taskEnv is the worker's environment beyond worker.BaseEnv.
func (p *confiner) taskEnv(tr *taskRun, ar *attemptRun) []string {
	return []string{
		EnvTaskID + "=" + strconv.FormatInt(tr.task.ID, 10),
		EnvOutputPath + "=" + ar.outAbs,
		EnvWorkspace + "=" + ar.ws.Dir,
		EnvAttempt + "=" + strconv.Itoa(ar.num),
		EnvBriefFile + "=" + ar.ws.BriefPath(ar.num),
	}
}
