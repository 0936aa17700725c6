package runner

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/judge"
	"github.com/countersign/countersign/runner/sandbox"
)

// common is what every part of the pool reads: the configuration, the store and its
// services, the log, who the pool acts as, and the pool's own events. Its methods are
// the few steps every part takes (a transaction, an event, the project rules, giving a
// lease back). It is shared by pointer: what it holds is read-only after Pool.Start,
// or guarded by its own lock (the rules cache).
type common struct {
	cfg     Config
	svc     services
	store   models.Store
	claimer models.Claimer
	log     *slog.Logger

	runner    *models.Agent // the system agent the pool acts as, set by Pool.Start
	startedAt time.Time     // when Pool.Start finished preparing

	rulesCache // the project rules, read at most once per rulesTTL
	// judgeStore is the judge's own object store: every base and candidate snapshot,
	// opened by Pool.Start. The judge, the reviewers and the landing read it.
	judgeStore *judge.Store

	events *publisher // remembers the events attempts append (inTx)
}

// attemptRunner runs a claimed task's attempts (attempt.go): it prepares each
// attempt's workspace, records its start, runs the worker and hands the rest to its
// parts, in this order — the confiner confines every run, the checker checks the
// output in the judging's view (asking the reviewers), the lander commits and pushes
// what passed, and the settler records the outcome. It holds only the flow's own
// state; the parts hold theirs. It is shared by every task goroutine: what it holds
// is read-only after Pool.Start, or guarded by its own lock (the revoker, the temp
// dirs).
type attemptRunner struct {
	*common

	conf     *confiner  // confines the worker and every judged run
	judging  *judging   // the judge's view of each attempt: base, candidate, environment
	checker  *checker   // runs the contract's check layers on an attempt
	reviews  *reviewing // the artifact review and its rounds
	lander   *lander    // the task branches and their verified commits
	settling *settler   // records each attempt's outcome (settle), and the triage

	revoker groupCommit[int64] // attempt tokens to revoke, batched (revokeAttemptToken)
	tmpDirs *tmpDirs           // attempts' private temp dirs
	exec    *executor          // the tasks running: whether the pool is stopping
}

// newAttemptRunner builds the attempt runner of a pool over cfg, its defaults applied,
// with its parts.
func newAttemptRunner(cfg Config, events *publisher, exec *executor) *attemptRunner {
	st := cfg.Service.Store()
	c := &common{
		cfg:     cfg,
		svc:     newServices(cfg.Service),
		store:   st,
		claimer: st.(models.Claimer),
		log:     cfg.Log.With("runner_id", cfg.RunnerID),
		events:  events,
	}
	// Recycled only where no process of an attempt can outlive it, or where nothing
	// confined it anyway.
	sb := cfg.Sandbox
	tmp := newTmpDirs(filepath.Join(cfg.Workspaces.Root(), "tmp"), sb == nil || !sb.Enabled() || sb.KillsEscapees())
	conf := &confiner{
		cfg:         cfg,
		log:         c.log,
		systemPaths: sandbox.SystemReadPaths(os.Getenv("PATH")),
		private:     canMakePrivateNetwork(cfg),
		gwPort:      gatewayPortOf(cfg),
		tmpDirs:     tmp,
	}
	jg := &judging{common: c, conf: conf}
	rv := &reviewing{common: c, conf: conf}
	p := &attemptRunner{
		common:   c,
		conf:     conf,
		judging:  jg,
		checker:  &checker{common: c, conf: conf, judging: jg, reviews: rv},
		reviews:  rv,
		lander:   &lander{common: c},
		settling: newSettler(c, rv),
		tmpDirs:  tmp,
		exec:     exec,
	}
	// Workers that exit together (a burst of short tasks) share a revocation: it
	// waits settleWindow for them, as a settle does.
	p.revoker.do, p.revoker.window = p.revokeAttemptTokens, settleWindow
	return p
}

// inTx runs fn in a transaction whose appended events count as the pool's (see
// publisher.inTx).
func (p *common) inTx(ctx context.Context, fn func(tx models.Tx) error) error {
	return p.events.inTx(ctx, fn)
}

// isStopping reports whether Stop was called: no new attempts start.
func (p *attemptRunner) isStopping() bool { return p.exec.isStopping() }

// settle records the attempt's outcome and what follows from it (see settler.settle).
func (p *attemptRunner) settle(tr *taskRun, ar *attemptRun) decision {
	return p.settling.settle(tr, ar)
}
