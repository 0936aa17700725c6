package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// settleTimeout bounds the transaction that records an attempt's outcome. It runs on
// a context of its own: a cancelled task (Stop, lost lease) must still be recorded.
const settleTimeout = 30 * time.Second

// tailBytes bounds the output tail stored with an attempt.
const tailBytes = 8 << 10

// settler records attempts' outcomes and moves their tasks on: settling runs in the
// task's goroutine, once per attempt, on a context of its own, and has no background
// work (the executor's Stop waits for settlements under way with their tasks). When a
// task's attempts ran out on work failures it also asks the triage (triage.go).
type settler struct {
	*common
	reviews *reviewing    // a passed or failed review round moves its review task on
	batches settleBatches // settles that finish together share a transaction (settle_batch.go)
}

// settle records the attempt and its consequence in one transaction (shared with
// other attempts that finish at the same time, settle_batch.go): the attempt row
// with every check, the attempt.finished event, and the task's state change — passed
// (RunnerPass: review/approve/verify per policy, ledger entry, next step released),
// failed with budget left (stays in progress for a revision), failed with the budget
// used up or an infrastructure failure past the bound (BlockTask: inbox item and
// task.blocked ledger entry), or released (stopping).
func (p *settler) settle(tr *taskRun, ar *attemptRun) decision {
	tr.settled.Store(true)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(tr.ctx), settleTimeout)
	defer cancel()
	req := &settleReq{ctx: ctx, tr: tr, ar: ar}
	p.record(req) // with other attempts finishing now, in one transaction
	d, err := req.d, req.err
	if err != nil {
		// Nothing was recorded. Let the lease go: a claim (ours or another runner's)
		// takes the task over and records this attempt as an infrastructure failure.
		p.log.Error("recording the attempt failed; releasing the task", "task_id", tr.task.ID, "attempt", ar.num, "err", err)
		p.releaseLease(tr)
		return decision{done: true}
	}
	tr.attempts = append(tr.attempts, *ar.row)
	p.observeAttempt(ar.outcome, ar.stage)
	p.observeUsage(tr.agent.Name, ar.usage)
	p.log.Info("attempt finished", "task_id", tr.task.ID, "attempt", ar.num, "agent", tr.agent.Name,
		"outcome", ar.outcome, "stage", ar.stage, "state", tr.task.State)
	return d
}

func (p *settler) settleTx(ctx context.Context, tx models.Tx, tr *taskRun, ar *attemptRun) (decision, error) {
	t, err := tx.LockTask(ctx, tr.task.ID)
	if err != nil {
		return decision{}, err
	}
	owned := t.State == models.TaskInProgress && t.LeaseOwner == p.cfg.RunnerID
	if !owned && ar.outcome != models.OutcomeInfra {
		// Cancelled, or taken over after our lease expired: our verdict can no longer
		// move the task; keep it as evidence, marked as what it is.
		ar.infra(fmt.Sprintf("%v: the task is %s and leased to %q; the attempt's result (%s%s) was not applied",
			ErrLeaseLost, t.State, t.LeaseOwner, ar.outcome, stageSuffix(ar.stage)), ErrLeaseLost)
	}
	if owned {
		askedDuring(t, ar)
	}
	if err := p.saveAttempt(ctx, tx, tr, ar, t); err != nil {
		return decision{}, err
	}
	if u := ar.usage; u != nil && u.CostUSD != nil {
		if err := p.svc.Attempts.WarnBudgets(ctx, tx, p.runner, t, &tr.agent, *u.CostUSD); err != nil {
			return decision{}, err
		}
	}
	if !owned {
		tr.task = *t
		return decision{done: true}, nil
	}
	if err := p.reviews.reviewSettled(ctx, tx, t, ar); err != nil {
		return decision{}, err
	}

	var d decision
	switch ar.outcome {
	case models.OutcomeQuestion:
		// No attempt used: the task waits for a person's answer, its lease released.
		err = p.svc.Tasks.Walk(ctx, tx, p.runner, t, models.Move{Act: models.ActAsk, In: models.ActionInput{Question: ar.question, Attempt: ar.num}})
		d.done = true
	case models.OutcomePassed:
		var batchNext bool
		if batchNext, err = p.reviews.batchReviewNext(ctx, tx, tr, t, ar); err != nil {
			return decision{}, err
		}
		if batchNext {
			err = p.keepLease(ctx, tx, t) // its next attempt is the batch's review
			break
		}
		advisory := t.Contract.Verification.Type == contract.VerifyAdvisory
		judged := ar.judge.judged()
		if ar.commit != "" {
			t.Commit = ar.commit
		}
		t.Fingerprint = ar.fingerprint
		if err := p.svc.Attempts.RunnerPassJudged(ctx, tx, p.runner, t, passSummary(ar, advisory), ar.outputHash, judged, advisory); err != nil {
			return decision{}, err
		}
		d.done = true
	case models.OutcomeImpossible:
		// The worker's word: no revision and no triage; a person decides.
		d.done = true
		err = p.impossible(ctx, tx, t, ar)
	case models.OutcomeFailed:
		d, err = p.failed(ctx, tx, t, ar)
	default:
		d, err = p.infraFailed(ctx, tx, t, ar)
	}
	if err != nil {
		return decision{}, err
	}
	tr.task = *t
	return d, nil
}

// failed charges a work failure and decides between a revision and blocking.
func (p *settler) failed(ctx context.Context, tx models.Tx, t *models.Task, ar *attemptRun) (decision, error) {
	if ar.reviewAgain {
		// A fix task for the reviewer's findings was added and the task waits for it,
		// its lease released (reviewSettled): not charged (see review).
		return decision{done: true}, nil
	}
	if ar.stage == models.StageBudget {
		// Stopped by a budget, not by its work: not charged, and no revision until a
		// person raises the budget.
		return decision{done: true}, p.block(ctx, tx, t, false)
	}
	t.AttemptsUsed++
	budget := attemptBudget(t)
	if t.AttemptsUsed >= budget || ar.stage == models.StageReview {
		if p.cfg.Triage != nil && t.Triage == nil {
			// Before a person: the triage, once per task. Marked in this transaction
			// so that a runner that dies while asking leaves it to be asked again,
			// never an attempt past the budget.
			t.Triage = &models.Triage{Status: models.TriagePending, At: time.Now().UTC()}
			return decision{triage: true}, p.keepLease(ctx, tx, t)
		}
		return decision{done: true}, p.block(ctx, tx, t, false)
	}
	var wait time.Duration
	if budget > contract.DefaultMaxAttempts {
		// Ralph mode: a fresh iteration after the cooldown.
		wait = t.Contract.Completion.Cooldown.Duration
	}
	return decision{wait: wait}, p.keepLease(ctx, tx, t)
}

// impossible blocks t on its worker's claim that it cannot be done as specified, with
// the failures of the round before it (models.AttemptService.BlockImpossibleTask).
// The claim uses no attempt of the budget: it is not a failure.
func (p *settler) impossible(ctx context.Context, tx models.Tx, t *models.Task, ar *attemptRun) error {
	attempts, err := tx.ListAttempts(ctx, t.ID)
	if err != nil {
		return err
	}
	return p.svc.Attempts.BlockImpossibleTask(ctx, tx, p.runner, t, ar.num, ar.impossible, roundAttempts(attempts, t.AttemptsUsed, false))
}

// infraFailed retries an infrastructure failure with backoff without charging the
// worker, blocks after MaxInfraFailures in a row, and lets a stopping runner's task go.
// Two failures are not retried by running the worker again: a worker command that
// could not run pauses its agent and lets the task wait for it (no lease, no charge);
// a check layer that gave no verdict in all its tries (see layer) blocks the task at
// once, the worker having run once.
func (p *settler) infraFailed(ctx context.Context, tx models.Tx, t *models.Task, ar *attemptRun) (decision, error) {
	if errors.Is(ar.cause, ErrStopping) || errors.Is(ar.cause, ErrLeaseLost) {
		t.LeaseOwner, t.LeaseUntil = "", nil
		return decision{done: true}, tx.UpdateTask(ctx, t)
	}
	if ar.agentExit != 0 {
		return decision{done: true}, p.pauseAgent(ctx, tx, t, ar)
	}
	if ar.layerExhausted {
		return decision{done: true}, p.block(ctx, tx, t, true)
	}
	attempts, err := tx.ListAttempts(ctx, t.ID)
	if err != nil {
		return decision{}, err
	}
	streak := infraStreak(attempts)
	if streak >= p.cfg.MaxInfraFailures {
		return decision{done: true}, p.block(ctx, tx, t, true)
	}
	return decision{wait: p.infraWait(streak)}, p.keepLease(ctx, tx, t)
}

// pauseAgent pauses the agent whose command could not run (models.AgentService.PauseAgent)
// and lets its task go without a lease: it stays in progress, assigned to the agent,
// and runs again once an admin has enabled the agent (or a person cancels it).
func (p *settler) pauseAgent(ctx context.Context, tx models.Tx, t *models.Task, ar *attemptRun) error {
	why := models.AgentPausedPayload{Attempt: ar.num, ExitCode: ar.agentExit, Reason: contract.Truncate(ar.diagnosis, 1500)}
	if err := p.svc.Agents.PauseAgent(ctx, tx, p.runner, ar.row.AgentID, t, why); err != nil {
		return err
	}
	t.LeaseOwner, t.LeaseUntil = "", nil
	return tx.UpdateTask(ctx, t)
}

// keepLease saves t (its budget) with a fresh lease for the next attempt.
func (p *settler) keepLease(ctx context.Context, tx models.Tx, t *models.Task) error {
	until := time.Now().Add(p.cfg.Lease)
	t.LeaseUntil = &until
	return tx.UpdateTask(ctx, t)
}

// block blocks t with every attempt of this round in the payload.
func (p *settler) block(ctx context.Context, tx models.Tx, t *models.Task, infra bool) error {
	attempts, err := tx.ListAttempts(ctx, t.ID)
	if err != nil {
		return err
	}
	return p.svc.Attempts.BlockTask(ctx, tx, p.runner, t, roundAttempts(attempts, t.AttemptsUsed, infra))
}

// saveAttempt writes the attempt row (creating it when the attempt failed before it
// began) and its attempt.finished event.
func (p *settler) saveAttempt(ctx context.Context, tx models.Tx, tr *taskRun, ar *attemptRun, t *models.Task) error {
	now := time.Now().UTC()
	row := ar.row
	if row == nil {
		row = &models.Attempt{TaskID: t.ID, Number: ar.num, AgentID: tr.agent.ID, RunnerID: p.cfg.RunnerID, StartedAt: ar.start.UTC(), Brief: ar.brief}
		if ar.ws != nil {
			row.LogPath = ar.ws.LogPath(ar.num)
		}
	}
	row.Outcome, row.Diagnosis = ar.outcome, ar.diagnosis
	row.Stage = ""
	if ar.outcome != models.OutcomePassed {
		row.Stage = ar.stage
	}
	row.Checks = ar.checks
	if row.Checks == nil {
		row.Checks = []models.CheckResult{}
	}
	if ar.outcome == models.OutcomeInfra && !slices.ContainsFunc(row.Checks, func(c models.CheckResult) bool { return c.Verdict == models.VerdictError }) {
		row.Checks = append(row.Checks, models.CheckResult{Stage: models.StageInfra, Verdict: models.VerdictError, Diagnosis: ar.diagnosis})
	}
	row.Criteria = ar.criteria
	row.Judge = ar.judge.judged()
	row.Deliverable = ar.deliverable()
	if err := p.priceUsage(ctx, tx, ar); err != nil {
		return err
	}
	row.Usage = ar.usage
	row.Network = ar.net.close()
	row.ExitCode = ar.res.ExitCode
	row.OutputTail = excerptRaw(ar.res.Tail, tailBytes)
	wsDir := ""
	if ar.ws != nil {
		wsDir = ar.ws.Dir
	}
	sanitizeAttempt(row, wsDir)
	row.OutputHash = ar.outputHash
	row.FinishedAt = &now
	if row.ID == 0 {
		if err := tx.CreateAttempt(ctx, row); err != nil {
			return err
		}
	} else if err := tx.UpdateAttempt(ctx, row); err != nil {
		return err
	}
	ar.row = row
	data := map[string]any{"attempt": ar.num, "outcome": ar.outcome, "agent": tr.agent.Name,
		"duration_ms": now.Sub(ar.start).Milliseconds()}
	if row.Stage != "" {
		data["stage"], data["diagnosis"] = row.Stage, contract.Truncate(row.Diagnosis, 500)
	}
	return p.event(ctx, tx, "attempt.finished", t, data)
}

// roundAttempts lists, oldest first, the failures of the current round for the
// blocked payload: back from the newest attempt to the last pass, at most `charged`
// work failures (the budget this round used; review rounds do not count against it),
// with the infrastructure failures too when infra says the block is theirs.
func roundAttempts(all []models.Attempt, charged int, infra bool) []models.BlockedAttempt {
	var out []models.BlockedAttempt
	n := 0
walk:
	for i := len(all) - 1; i >= 0; i-- {
		a := all[i]
		if a.Outcome == models.OutcomePassed {
			break
		}
		switch {
		case a.Outcome == models.OutcomeFailed && a.Stage != models.StageReview:
			if n >= charged {
				break walk // an earlier round's failure
			}
			n++
		case a.Outcome == models.OutcomeFailed:
		case a.Outcome == models.OutcomeInfra && infra:
		default:
			continue
		}
		out = append(out, models.BlockedAttempt{Attempt: a.Number, Stage: a.Stage, Failure: a.Diagnosis})
	}
	slices.Reverse(out)
	return out
}

// infraStreak counts the newest attempts that in a row were infrastructure failures,
// leaving out those cut short by a runner stopping (an operator's restart is no
// reason to block a task).
func infraStreak(all []models.Attempt) int {
	n := 0
	for i := len(all) - 1; i >= 0; i-- {
		a := all[i]
		if a.Outcome != models.OutcomeInfra {
			break
		}
		if !strings.HasPrefix(a.Diagnosis, ErrStopping.Error()) {
			n++
		}
	}
	return n
}

// passSummary is the submission summary the runner records for a passed attempt.
func passSummary(ar *attemptRun, advisory bool) string {
	var stages []string
	for _, c := range ar.checks {
		if c.Verdict == models.VerdictPass {
			stages = append(stages, c.Stage)
		}
	}
	s := fmt.Sprintf("attempt %d passed the runner's checks (%s)", ar.num, strings.Join(stages, ", "))
	if advisory {
		s = fmt.Sprintf("advisory: attempt %d finished cleanly; its output needs a person's look", ar.num)
	}
	if ar.outAbs != "" {
		s += "; output " + relTo(ar.ws.Dir, ar.outAbs) // the workspace's name for it: the server's layout stays private
	}
	return s
}

func stageSuffix(stage string) string {
	if stage == "" {
		return ""
	}
	return " at " + stage
}

// excerptRaw keeps the last n bytes of b as text.
func excerptRaw(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return clean(string(b))
}

// clean makes worker-produced text storable: valid UTF-8 without NUL bytes, which
// PostgreSQL's text columns refuse (a worker printing one must not make its own
// attempt unrecordable).
func clean(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// sanitizeAttempt cleans every text of an attempt that may quote worker output, and
// names what lies in the workspace dir (when known) relative to it: the worker reads
// diagnoses from inside the workspace and people on the dashboard, and neither needs
// the server's layout ("output file 7/guide.md", not ".../data/work/tasks/7/7/guide.md").
func sanitizeAttempt(a *models.Attempt, dir string) {
	fix := func(s string) string { return clean(relativeTo(dir, s)) }
	a.Diagnosis = fix(a.Diagnosis)
	for i := range a.Checks {
		a.Checks[i].Diagnosis = fix(a.Checks[i].Diagnosis)
	}
	for i := range a.Criteria {
		a.Criteria[i].Error = fix(a.Criteria[i].Error)
	}
}

// relativeTo rewrites every mention of the directory dir in s relative to it: "dir/x"
// becomes "x" and dir itself ".". A longer name that merely starts with dir ("dir0")
// is left alone; so is everything when dir is empty or "/".
func relativeTo(dir, s string) string {
	dir = strings.TrimRight(dir, "/")
	if dir == "" || !strings.Contains(s, dir) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, dir)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		rest := s[i+len(dir):]
		switch {
		case strings.HasPrefix(rest, "/"):
			s = rest[1:]
		case rest == "" || !isNameByte(rest[0]):
			b.WriteString(".")
			s = rest
		default:
			b.WriteString(dir)
			s = rest
		}
	}
}

// isNameByte reports whether c may continue a file name: a path that continues past
// dir with one of these names another directory.
func isNameByte(c byte) bool {
	return c == '.' || c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
