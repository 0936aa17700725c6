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

// attemptRunner holds what one attempt of a task needs, and its methods (attempt.go,
// checks.go, judge*.go, outcome.go, …) run a claimed task's attempts from preparing
// the workspace to settling the outcome. It is shared by every task goroutine: what
// it holds is read-only after Pool.Start, or guarded by its own lock (the rules
// cache, the revoker, the temp dirs). The services that run in the background (the
// claim loop, the heartbeat, the cleanup, the rechecker) reach it through it too.
type attemptRunner struct {
	cfg     Config
	svc     services
	store   models.Store
	claimer models.Claimer
	log     *slog.Logger

	runner    *models.Agent // the system agent the pool acts as, set by Pool.Start
	startedAt time.Time     // when Pool.Start finished preparing

	systemPaths []string // what every confined run may read: sandbox.SystemReadPaths, once
	private     bool     // confined runs get a private network (privateNetwork), decided once
	gwPort      uint16   // the model gateway's port (gatewayPort), 0 without one

	rulesCache                    // the project rules, read at most once per rulesTTL
	revoker    groupCommit[int64] // attempt tokens to revoke, batched (revokeAttemptToken)
	tmpDirs    *tmpDirs           // attempts' private temp dirs
	// judgeStore is the judge's own object store: every base and candidate snapshot,
	// opened by Pool.Start.
	judgeStore *judge.Store

	events   *publisher // remembers the events attempts append (inTx)
	exec     *executor  // the tasks running: whether the pool is stopping
	settling *settler   // records each attempt's outcome (settle)
}

// newAttemptRunner builds the attempt runner of a pool over cfg, its defaults applied.
func newAttemptRunner(cfg Config, events *publisher, exec *executor) *attemptRunner {
	st := cfg.Service.Store()
	p := &attemptRunner{
		cfg:     cfg,
		svc:     newServices(cfg.Service),
		store:   st,
		claimer: st.(models.Claimer),
		log:     cfg.Log.With("runner_id", cfg.RunnerID),
		events:  events,
		exec:    exec,

		systemPaths: sandbox.SystemReadPaths(os.Getenv("PATH")),
		private:     canMakePrivateNetwork(cfg),
		gwPort:      gatewayPortOf(cfg),
	}
	p.settling = &settler{attemptRunner: p}
	p.revoker.do = p.revokeAttemptTokens
	// Recycled only where no process of an attempt can outlive it, or where nothing
	// confined it anyway.
	sb := cfg.Sandbox
	p.tmpDirs = newTmpDirs(filepath.Join(cfg.Workspaces.Root(), "tmp"), sb == nil || !sb.Enabled() || sb.KillsEscapees())
	return p
}

// inTx runs fn in a transaction whose appended events count as the pool's (see
// publisher.inTx).
func (p *attemptRunner) inTx(ctx context.Context, fn func(tx models.Tx) error) error {
	return p.events.inTx(ctx, fn)
}

// isStopping reports whether Stop was called: no new attempts start.
func (p *attemptRunner) isStopping() bool { return p.exec.isStopping() }

// runningIDs lists the tasks this pool runs, which a claim must not hand out again.
func (p *attemptRunner) runningIDs() []int64 { return p.exec.runningIDs() }

// settle records the attempt's outcome and what follows from it (see settler.settle).
func (p *attemptRunner) settle(tr *taskRun, ar *attemptRun) decision {
	return p.settling.settle(tr, ar)
}
