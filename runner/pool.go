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
	"log/slog"
	"sync"
	"time"

	"github.com/countersign/countersign/models"
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
	svc     *models.Service
	store   models.Store
	claimer models.Claimer
	log     *slog.Logger

	runner *models.Agent // the system agent the pool acts as

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
}

// New checks cfg, applies its defaults and returns a Pool that has not started.
func New(cfg Config) (*Pool, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	st := cfg.Service.Store()
	return &Pool{
		cfg:     cfg,
		svc:     cfg.Service,
		store:   st,
		claimer: st.(models.Claimer),
		log:     cfg.Log.With("runner_id", cfg.RunnerID),
		running: map[int64]*taskRun{},
		wake:    make(chan struct{}, 1),
	}, nil
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
	runner, err := p.svc.RunnerAgent(ctx)
	if err != nil {
		return err
	}
	p.runner = runner
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
		p.heartbeat(hbCtx)
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
func (p *Pool) loop(ctx, taskCtx context.Context, events <-chan int64) {
	tick := time.NewTicker(p.cfg.Poll)
	defer tick.Stop()
	for {
		p.claimAll(ctx, taskCtx)
		select {
		case <-ctx.Done():
			return
		case _, ok := <-events:
			if !ok {
				events = nil // the store closed: polling still works
			}
		case <-p.wake:
		case <-tick.C:
		}
	}
}

// claimAll claims batches until nothing more can be claimed now.
func (p *Pool) claimAll(ctx, taskCtx context.Context) {
	for ctx.Err() == nil {
		runs, err := p.claim(ctx)
		if err != nil {
			if ctx.Err() == nil {
				p.log.Warn("claim failed; retrying on the next wake-up", "err", err)
			}
			return
		}
		if len(runs) == 0 {
			return
		}
		for _, tr := range runs {
			p.launch(taskCtx, tr)
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
