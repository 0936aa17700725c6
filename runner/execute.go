package runner

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/countersign/countersign/runner/startstop"
)

// executor is attempt execution as a service: it runs each claimed task in a goroutine
// of its own (attemptRunner.runTask) and knows which tasks run. Tasks outlive the
// context of Start: only Stop cancels them, with ErrStopping, once the grace period
// is over.
type executor struct {
	startstop.Base
	grace   time.Duration // how long Stop lets running tasks finish (Config.Grace)
	log     *slog.Logger
	runTask func(tr *taskRun) // runs one task's attempts (attemptRunner.runTask)
	freed   func()            // wakes the claim loop: a task ended and freed its agent's slot

	mu       sync.Mutex
	running  map[int64]*taskRun
	stopping bool

	ctx    context.Context         // every task's context derives from it
	cancel context.CancelCauseFunc // cancels every task, with ErrStopping
	tasks  sync.WaitGroup
}

// Start lets tasks be launched; it may be called once.
func (e *executor) Start(ctx context.Context) error {
	// The base's context ends only at Stop; when it has and every task has ended, the
	// executor has stopped.
	life, ok, started, stopped := e.StartInitOnce(context.WithoutCancel(ctx))
	if !ok {
		return errors.New("runner: executor already started")
	}
	e.ctx, e.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	go func() {
		defer stopped()
		started()
		<-life.Done()
		e.tasks.Wait()
	}()
	return nil
}

// beginStop makes isStopping true: no new attempt starts. Pool.Stop calls it before
// it stops any service.
func (e *executor) beginStop() {
	e.mu.Lock()
	e.stopping = true
	e.mu.Unlock()
}

// Stop lets the running tasks finish for up to the grace period, then cancels them
// with ErrStopping and waits for them, or for ctx. Call it once the claim loop has
// stopped: nothing may be launched meanwhile.
func (e *executor) Stop(ctx context.Context) error {
	e.beginStop()
	ok, done, finish := e.StopInit()
	if !ok {
		return nil
	}
	grace := time.NewTimer(e.grace)
	defer grace.Stop()
	var err error
	select {
	case <-done:
	case <-grace.C:
		e.log.Info("grace period over: cancelling running workers", "tasks", e.runningCount())
		e.cancel(ErrStopping)
		select {
		case <-done:
		case <-ctx.Done():
			err = ctx.Err()
		}
	case <-ctx.Done():
		e.cancel(ErrStopping)
		err = ctx.Err()
	}
	e.cancel(ErrStopping)
	finish(err == nil)
	return err
}

// isStopping reports whether Stop was called: no new attempts start.
func (e *executor) isStopping() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stopping
}

func (e *executor) runningCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.running)
}

// get returns the running task id, or nil.
func (e *executor) get(id int64) *taskRun {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.running[id]
}

// launch registers a claimed task and runs it in its own goroutine.
func (e *executor) launch(tr *taskRun) {
	tr.ctx, tr.cancel = context.WithCancelCause(e.ctx)
	e.mu.Lock()
	e.running[tr.task.ID] = tr
	e.mu.Unlock()
	e.tasks.Add(1)
	go func() {
		defer e.tasks.Done()
		defer func() {
			tr.cancel(nil)
			e.mu.Lock()
			delete(e.running, tr.task.ID)
			e.mu.Unlock()
			e.freed()
		}()
		e.runTask(tr)
	}()
}

// runningIDs lists the tasks this pool runs, which a claim must not hand out again.
func (e *executor) runningIDs() []int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := make([]int64, 0, len(e.running))
	for id := range e.running {
		ids = append(ids, id)
	}
	return ids
}
