// Package runner is the runner pool: it claims ready tasks together with idle worker
// agents, runs the agents' commands, checks their output against the task's contract
// in layers (cheapest first), retries with a precise diagnosis while the budget lasts,
// and moves the governance state on through models.Service — verified, or blocked with
// the evidence for a person.
//
// One Pool runs per process. Several processes share one PostgreSQL database: claims
// lock rows with SKIP LOCKED, leases are renewed by a heartbeat, and a task whose
// runner died is taken over once its lease expires, without using up an attempt.
//
// The subpackages hold the parts: worker (running one command), workspace (where it
// runs), checks (the check layers), evaluator (semantic evaluation) and ledger.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/judge"
	"github.com/countersign/countersign/runner/sandbox"
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

// Pool claims and runs tasks. Create it with New, then Start and Stop it once.
type Pool struct {
	cfg     Config
	svc     services
	store   models.Store
	claimer models.Claimer
	log     *slog.Logger

	runner *models.Agent // the system agent the pool acts as

	systemPaths []string // what every confined run may read: sandbox.SystemReadPaths, once
	private     bool     // confined runs get a private network (privateNetwork), decided once
	gwPort      uint16   // the model gateway's port (gatewayPort), 0 without one

	mu        sync.Mutex
	running   map[int64]*taskRun
	started   bool
	stopping  bool
	startedAt time.Time

	wake       chan struct{}
	loopCancel context.CancelFunc
	loopDone   chan struct{}
	hbCancel   context.CancelFunc
	hbDone     chan struct{}
	taskCancel context.CancelCauseFunc
	tasks      sync.WaitGroup

	stopOnce sync.Once
	stopErr  error

	rulesMu  sync.Mutex
	rulesVal *models.ProjectRules // cached by rules; nil when none
	rulesAt  time.Time
	rulesGen int // bumped by forgetRules

	evMu sync.Mutex
	own  map[int64]bool // ids of events this pool appended that no wake-up has covered yet
	seen int64          // the newest event id a wake-up covered

	revoker groupCommit[int64] // attempt tokens to revoke, batched (revokeAttemptToken)
	tmpDirs *tmpDirs           // attempts' private temp dirs
	// judgeStore is the judge's own object store: every base and candidate snapshot.
	judgeStore *judge.Store
}

// New checks cfg, applies its defaults and returns a Pool that has not started.
func New(cfg Config) (*Pool, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	st := cfg.Service.Store()
	p := &Pool{
		cfg:     cfg,
		svc:     newServices(cfg.Service),
		store:   st,
		claimer: st.(models.Claimer),
		log:     cfg.Log.With("runner_id", cfg.RunnerID),
		running: map[int64]*taskRun{},
		wake:    make(chan struct{}, 1),
		own:     map[int64]bool{},

		systemPaths: sandbox.SystemReadPaths(os.Getenv("PATH")),
		private:     canMakePrivateNetwork(cfg),
		gwPort:      gatewayPortOf(cfg),
	}
	p.revoker.do = p.revokeAttemptTokens
	// Recycled only where no process of an attempt can outlive it, or where nothing
	// confined it anyway.
	sb := cfg.Sandbox
	p.tmpDirs = newTmpDirs(filepath.Join(cfg.Workspaces.Root(), "tmp"), sb == nil || !sb.Enabled() || sb.KillsEscapees())
	return p, nil
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
	runner, err := p.svc.Agents.RunnerAgent(ctx)
	if err != nil {
		return err
	}
	p.runner = runner
	if p.cfg.Procs != nil {
		// Before any claim: what a runner that died on this host left running must not
		// write beside the attempts this one starts.
		n, err := p.cfg.Procs.ReapAll(ctx)
		if err != nil {
			return fmt.Errorf("runner: reaping the processes an earlier runner left: %w", err)
		}
		if n > 0 {
			p.log.Warn("reaped process groups an earlier runner left running", "groups", n)
		}
	}
	// Upgrade path (judge.RecoverAll): a runner of the previous version that died
	// mid-check left a workspace as its in-place judge's view, held-out tests in it and
	// the worker's tests replaced; the worker's files go back before a worker runs there.
	if closed, err := judge.RecoverAll(filepath.Join(p.cfg.Workspaces.Root(), "meta")); err != nil {
		return fmt.Errorf("runner: putting back the workspaces a previous version's judge left: %w", err)
	} else if len(closed) > 0 {
		p.log.Warn("put back the workspaces of in-place judge's views a previous runner left", "views", len(closed))
	}
	if removed, err := judge.RecoverViews(filepath.Join(p.cfg.Workspaces.Root(), "meta")); err != nil {
		return fmt.Errorf("runner: removing the judge's views an earlier runner left: %w", err)
	} else if len(removed) > 0 {
		p.log.Warn("removed judge's views an earlier runner left", "views", len(removed))
	}
	store, err := judge.OpenStore(ctx, p.cfg.Workspaces.Root())
	if err != nil {
		return fmt.Errorf("runner: opening the judge's store: %w", err)
	}
	p.judgeStore = store
	p.tmpDirs.removeSpares()
	// Expired attempt tokens authenticate nobody; their rows need not pile up.
	if _, err := p.svc.Tokens.PruneAttemptTokens(ctx); err != nil {
		p.log.Warn("pruning expired attempt tokens failed", "err", err)
	}
	p.started = true
	p.startedAt = time.Now()

	// Tasks outlive ctx: only Stop cancels them, after the grace period.
	taskCtx, taskCancel := context.WithCancelCause(context.WithoutCancel(ctx))
	p.taskCancel = taskCancel
	loopCtx, loopCancel := context.WithCancel(ctx)
	p.loopCancel, p.loopDone = loopCancel, make(chan struct{})
	hbCtx, hbCancel := context.WithCancel(context.WithoutCancel(ctx))
	p.hbCancel, p.hbDone = hbCancel, make(chan struct{})

	events := p.store.Subscribe(loopCtx)
	go func() {
		defer close(p.loopDone)
		p.loop(loopCtx, taskCtx, events)
	}()
	go func() {
		defer close(p.hbDone)
		janitorDone, deferredDone := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(janitorDone)
			p.janitor(hbCtx)
		}()
		go func() {
			defer close(deferredDone)
			p.deferredLoop(hbCtx)
		}()
		p.heartbeat(hbCtx)
		<-janitorDone
		<-deferredDone
	}()
	p.log.Info("runner pool started", "lease", p.cfg.Lease, "poll", p.cfg.Poll)
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

func (p *Pool) stop(ctx context.Context) error {
	p.mu.Lock()
	p.stopping = true
	started := p.started
	p.mu.Unlock()
	if !started {
		return nil
	}
	p.loopCancel()
	<-p.loopDone

	done := make(chan struct{})
	go func() {
		p.tasks.Wait()
		close(done)
	}()
	grace := time.NewTimer(p.cfg.Grace)
	defer grace.Stop()
	var err error
	select {
	case <-done:
	case <-grace.C:
		p.log.Info("grace period over: cancelling running workers", "tasks", p.runningCount())
		p.taskCancel(ErrStopping)
		select {
		case <-done:
		case <-ctx.Done():
			err = ctx.Err()
		}
	case <-ctx.Done():
		p.taskCancel(ErrStopping)
		err = ctx.Err()
	}
	p.taskCancel(ErrStopping)
	p.hbCancel()
	<-p.hbDone
	if err == nil {
		// Only once every task is done: a task still running reads the store.
		_ = p.judgeStore.Close()
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

// isStopping reports whether Stop was called: no new attempts start.
func (p *Pool) isStopping() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopping
}

func (p *Pool) runningCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.running)
}

// notify wakes the claim loop (an agent slot was freed).
func (p *Pool) notify() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// loop claims until ctx ends, waking on events, on freed slots and on the poll tick.
// Events this pool appended itself wake no claim: none of them makes work claimable
// that the pool's own wake-up (a task goroutine ending frees its slot and follows any
// task its outcome released) does not already cover.
func (p *Pool) loop(ctx, taskCtx context.Context, events <-chan int64) {
	tick := time.NewTicker(p.cfg.Poll)
	defer tick.Stop()
	claim := true
	for {
		if claim {
			p.claimAll(ctx, taskCtx)
		}
		claim = true
		select {
		case <-ctx.Done():
			return
		case id, ok := <-events:
			if !ok {
				events = nil // the store closed: polling still works
				p.evMu.Lock()
				p.own = nil
				p.evMu.Unlock()
				continue
			}
			claim = !p.onlyOwn(id)
			if claim {
				p.forgetRules()
			}
		case <-p.wake:
		case <-tick.C:
		}
	}
}

// maxOwnEvents bounds the ids remembered by ownEvents; forgetting them only costs
// claims that find nothing.
const maxOwnEvents = 4096

// onlyOwn reports whether every event up to id that no earlier wake-up covered was
// appended by this pool. Ids are committed in order, so a wake-up for id covers every
// event up to it; a gap (another writer's event, a rolled-back id) counts as foreign.
func (p *Pool) onlyOwn(id int64) bool {
	p.evMu.Lock()
	defer p.evMu.Unlock()
	if p.own == nil {
		return false
	}
	only := id <= p.seen || int(id-p.seen) <= len(p.own)
	for i := p.seen + 1; only && i <= id; i++ {
		only = p.own[i]
	}
	for k := range p.own {
		if k <= id {
			delete(p.own, k)
		}
	}
	p.seen = max(p.seen, id)
	return only
}

// ownEvents remembers (add) or forgets (a transaction that did not commit) ids of
// events this pool appended.
func (p *Pool) ownEvents(ids []int64, add bool) {
	if len(ids) == 0 {
		return
	}
	p.evMu.Lock()
	defer p.evMu.Unlock()
	if p.own == nil {
		return
	}
	if add && len(p.own)+len(ids) > maxOwnEvents {
		clear(p.own)
	}
	for _, id := range ids {
		if add {
			p.own[id] = true
		} else {
			delete(p.own, id)
		}
	}
}

// inTx runs fn in a transaction of the store whose Tx remembers the events it
// appends as this pool's (see loop). They are remembered before the commit, so that
// the wake-up the commit causes finds them, and forgotten when fn fails, before the
// rollback: an id that never commits may be handed out again to someone else.
func (p *Pool) inTx(ctx context.Context, fn func(tx models.Tx) error) error {
	var ids []int64
	err := p.store.InTx(ctx, func(tx models.Tx) (err error) {
		ids = ids[:0]
		ok := false
		defer func() {
			if !ok {
				p.ownEvents(ids, false)
			}
		}()
		err = fn(ownTx{Tx: tx, p: p, ids: &ids})
		ok = err == nil
		return err
	})
	if err != nil {
		p.ownEvents(ids, false)
	}
	return err
}

// ownTx is a Tx whose appended events are remembered as the pool's.
type ownTx struct {
	models.Tx
	p   *Pool
	ids *[]int64
}

func (o ownTx) AppendEvent(ctx context.Context, e *models.Event) error {
	return o.AppendEvents(ctx, []*models.Event{e})
}

func (o ownTx) AppendEvents(ctx context.Context, es []*models.Event) error {
	if err := o.Tx.AppendEvents(ctx, es); err != nil {
		return err
	}
	// The store gives events their ids just before the commit.
	o.Tx.BeforeCommit(func() {
		ids := make([]int64, len(es))
		for i, e := range es {
			ids[i] = e.ID
		}
		*o.ids = append(*o.ids, ids...)
		o.p.ownEvents(ids, true)
	})
	return nil
}

// unwrapTx returns the store's own Tx behind tx.
func unwrapTx(tx models.Tx) models.Tx {
	if o, ok := tx.(ownTx); ok {
		return o.Tx
	}
	return tx
}

// claimAll claims batches until nothing more can be claimed now: a batch that was
// not full considered every ready task an idle agent could take.
func (p *Pool) claimAll(ctx, taskCtx context.Context) {
	for ctx.Err() == nil {
		runs, more, err := p.claim(ctx)
		if err != nil {
			if ctx.Err() == nil {
				p.log.Warn("claim failed; retrying on the next wake-up", "err", err)
			}
			return
		}
		for _, tr := range runs {
			p.launch(taskCtx, tr)
		}
		if len(runs) == 0 || !more {
			return
		}
	}
}

// launch registers a claimed task and runs it in its own goroutine.
func (p *Pool) launch(parent context.Context, tr *taskRun) {
	tr.ctx, tr.cancel = context.WithCancelCause(parent)
	p.mu.Lock()
	p.running[tr.task.ID] = tr
	p.mu.Unlock()
	p.tasks.Add(1)
	go func() {
		defer p.tasks.Done()
		defer func() {
			tr.cancel(nil)
			p.mu.Lock()
			delete(p.running, tr.task.ID)
			p.mu.Unlock()
			p.notify()
		}()
		p.runTask(tr)
	}()
}

// runningIDs lists the tasks this pool runs, which a claim must not hand out again.
func (p *Pool) runningIDs() []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]int64, 0, len(p.running))
	for id := range p.running {
		ids = append(ids, id)
	}
	return ids
}
