// Package runner is the runner pool: it claims ready tasks together with idle worker
// agents, runs the agents' commands, checks their output against the task's contract
// in layers (cheapest first), retries with a precise diagnosis while the budget lasts,
// and moves the governance state on through the aggregates of models.Service — verified, or blocked with
// the evidence for a person.
//
// One Pool runs per process. Several processes share one PostgreSQL database: claims
// lock rows with SKIP LOCKED, leases are renewed by a heartbeat, and a task whose
// runner died is taken over once its lease expires, without using up an attempt.
//
// The Pool only wires its services, each with Start and Stop on startstop.Base or
// loop.Loop: the publisher (events), heartbeat (leases), cleanup (worktrees),
// rechecker (goals' deferred checks), executor (the running tasks) and claimLoop
// (claims). A claimed task's attempts run in the attemptRunner (attempt.go), which
// keeps the attempt's flow and hands each step to a part that holds only what it
// uses: the confiner confines every run (sandbox policy, private network, model
// gateway), the judging snapshots base and candidate into the judge's own store and
// runs commands in its view, the checker runs the check layers, the reviewing runs
// the artifact review and its rounds, the lander keeps the task branches, and the
// settler records each outcome (and asks the triage). What they all read — config,
// store, log, the runner agent, the rules — is one shared common.
//
// The subpackages hold the parts: worker (running one command), workspace (where it
// runs), checks (the check layers), evaluator (semantic evaluation) and ledger.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/judge"
	"github.com/countersign/countersign/runner/startstop"
)

// Causes a task's context is cancelled with; attempts cut short by them are
// infrastructure failures, never the worker's.
var (
	// ErrStopping is the cause when Stop's grace period ended before the worker did.
	ErrStopping = errors.New("runner stopping")
	// ErrLeaseLost is the cause when the heartbeat found the task no longer leased to
	// this runner (cancelled by a person, or taken over after an expiry).
	ErrLeaseLost = errors.New("lease lost")
)

// Pool claims and runs tasks. Create it with New, then Start and Stop it once. It
// only wires its services: each runs in the background between its Start and Stop
// (on startstop.Base), and holds the state it alone changes.
type Pool struct {
	cfg Config
	log *slog.Logger

	run     *attemptRunner // runs one claimed task's attempts, settling each
	events  *publisher     // the pool's own events; wake-ups for everyone else's
	beat    *heartbeat     // renews the running tasks' leases
	clean   *cleanup       // removes worktrees no task needs, and spare temp dirs
	recheck *rechecker     // runs goals' deferred checks
	exec    *executor      // the running tasks, the grace period at Stop
	claims  *claimLoop     // claims ready tasks with idle agents

	mu      sync.Mutex
	started bool

	stopOnce sync.Once
	stopErr  error
}

// New checks cfg, applies its defaults and returns a Pool that has not started.
func New(cfg Config) (*Pool, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	exec := &executor{running: map[int64]*taskRun{}}
	run := newAttemptRunner(cfg, nil, exec)
	run.events = newPublisher(run.store, run.forgetRules)
	exec.grace, exec.log, exec.runTask = cfg.Grace, run.log, run.runTask
	claims := &claimLoop{common: run.common, starts: run, tmpDirs: run.tmpDirs, exec: exec, wake: make(chan struct{}, 1)}
	exec.freed = claims.notify
	beat := &heartbeat{cfg: cfg, claimer: run.claimer, log: run.log, exec: exec,
		pres: newPresence(cfg, cfg.Service.Store(), run.log), wake: claims.notify}
	return &Pool{
		cfg:     cfg,
		log:     run.log,
		run:     run,
		events:  run.events,
		beat:    beat,
		clean:   &cleanup{cfg: cfg, store: run.store, log: run.log, exec: exec},
		recheck: &rechecker{common: run.common, conf: run.conf, judging: run.judging},
		exec:    exec,
		claims:  claims,
	}, nil
}

// services lists the pool's services in the order they start; they stop in the
// reverse order. The heartbeat starts before the tasks run and stops after they ended,
// so that no running task loses its lease to a stop; the claim loop starts last and
// stops first, so that no task is claimed that nothing would run.
func (p *Pool) services() []startstop.Service {
	return []startstop.Service{p.events, p.beat, p.clean, p.recheck, p.exec, p.claims}
}

// Start begins claiming: at once, then whenever events are committed (a task was
// created, released, rejected, retried; an agent freed up), and every Poll as a
// fallback. Cancelling ctx stops claiming; running tasks end only through Stop, which
// gives them the grace period. Start may be called once.
func (p *Pool) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return errors.New("runner: pool already started")
	}
	if err := p.prepare(ctx); err != nil {
		return err
	}
	p.started = true
	var running []startstop.Service
	for _, s := range p.services() {
		if err := s.Start(ctx); err != nil {
			_ = startstop.StopAll(context.WithoutCancel(ctx), running...)
			return err
		}
		running = append(running, s)
	}
	p.log.Info("runner pool started", "lease", p.cfg.Lease, "poll", p.cfg.Poll)
	return nil
}

// prepare does, before any service starts, what must precede every claim: who the
// pool acts as, what earlier runners left behind, the judge's store.
func (p *Pool) prepare(ctx context.Context) error {
	runner, err := p.run.svc.Agents.RunnerAgent(ctx)
	if err != nil {
		return err
	}
	p.run.runner = runner
	// The proof that this id's earlier process died is its owner lock file, which
	// ReapAll tidies away: looked at first, acted on once ReapAll killed its workers.
	if err := p.beat.pres.judge(ctx); err != nil {
		return fmt.Errorf("runner: reading this runner id's earlier processes: %w", err)
	}
	if err := p.reapEarlier(ctx); err != nil {
		return err
	}
	if err := p.beat.pres.start(ctx); err != nil {
		return fmt.Errorf("runner: recording this runner's heartbeat: %w", err)
	}
	if err := p.recoverJudge(); err != nil {
		return err
	}
	store, err := judge.OpenStore(ctx, p.cfg.Workspaces.Root())
	if err != nil {
		return fmt.Errorf("runner: opening the judge's store: %w", err)
	}
	p.run.judgeStore = store
	p.run.tmpDirs.removeSpares()
	// Expired attempt tokens authenticate nobody; their rows need not pile up.
	if _, err := p.run.svc.Tokens.PruneAttemptTokens(ctx); err != nil {
		p.log.Warn("pruning expired attempt tokens failed", "err", err)
	}
	p.run.startedAt = time.Now()
	return nil
}

// reapEarlier kills, before any claim, what a runner that died on this host left
// running: it must not write beside the attempts this one starts.
func (p *Pool) reapEarlier(ctx context.Context) error {
	if p.cfg.Procs == nil {
		return nil
	}
	n, err := p.cfg.Procs.ReapAll(ctx)
	if err != nil {
		return fmt.Errorf("runner: reaping the processes an earlier runner left: %w", err)
	}
	if n > 0 {
		p.log.Warn("reaped process groups an earlier runner left running", "groups", n)
	}
	return nil
}

// recoverJudge puts back what an earlier runner's judge left in the workspaces.
// Upgrade path (judge.RecoverAll): a runner of the previous version that died
// mid-check left a workspace as its in-place judge's view, held-out tests in it and
// the worker's tests replaced; the worker's files go back before a worker runs there.
func (p *Pool) recoverJudge() error {
	meta := filepath.Join(p.cfg.Workspaces.Root(), "meta")
	if closed, err := judge.RecoverAll(meta); err != nil {
		return fmt.Errorf("runner: putting back the workspaces a previous version's judge left: %w", err)
	} else if len(closed) > 0 {
		p.log.Warn("put back the workspaces of in-place judge's views a previous runner left", "views", len(closed))
	}
	if removed, err := judge.RecoverViews(meta); err != nil {
		return fmt.Errorf("runner: removing the judge's views an earlier runner left: %w", err)
	} else if len(removed) > 0 {
		p.log.Warn("removed judge's views an earlier runner left", "views", len(removed))
	}
	return nil
}

// Stop stops claiming, lets running workers finish for up to the grace period, then
// cancels them: their attempts are recorded as infrastructure failures ("runner
// stopping") and their leases released, so another runner can take the tasks over at
// once. It returns when every task goroutine has ended, or with ctx's error when ctx
// ends first. Stop is idempotent; later calls return the first call's result.
func (p *Pool) Stop(ctx context.Context) error {
	p.stopOnce.Do(func() { p.stopErr = p.stop(ctx) })
	return p.stopErr
}

// stop stops the services in the reverse of their start order. Only the running
// tasks' wait is bounded by ctx; the other services end promptly once told, and are
// always waited for.
func (p *Pool) stop(ctx context.Context) error {
	p.exec.beginStop()
	p.mu.Lock()
	started := p.started
	p.mu.Unlock()
	if !started {
		return nil
	}
	var err error
	svcs := p.services()
	for i := len(svcs) - 1; i >= 0; i-- {
		sctx := context.WithoutCancel(ctx)
		if svcs[i] == startstop.Service(p.exec) {
			sctx = ctx
		}
		if serr := svcs[i].Stop(sctx); serr != nil && err == nil {
			err = serr
		}
	}
	if err == nil {
		// Only once every task is done: a task still running reads the store.
		_ = p.run.judgeStore.Close()
	}
	if gs := p.cfg.GatewayService; gs != nil {
		// Its last calls are the workers' that just ended.
		if gerr := gs.Stop(ctx); gerr != nil && err == nil {
			err = gerr
		}
	}
	p.log.Info("runner pool stopped")
	return err
}

// EffectivePolicy describes, one grant per line, what a's confined processes may
// touch in any attempt — with <task> and <n> standing for the task and attempt — and
// whether the sandbox confines them at all; for the agent page.
func (p *Pool) EffectivePolicy(a *models.Agent) []string { return p.run.conf.EffectivePolicy(a) }

// GatewayStatus says what the pool's model gateway serves and how its confined runs
// reach the network, for the dashboard.
func (p *Pool) GatewayStatus() models.GatewayStatus { return p.run.conf.GatewayStatus() }
