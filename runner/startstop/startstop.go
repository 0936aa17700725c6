// Package startstop is the start/stop base every background service of Countersign
// embeds (the runner's claim loop, executor, heartbeat and cleanup, the webhook
// dispatcher, the ledger publisher, the periodic loops, the model gateway's server,
// each run's egress proxy, and the web side's live hub): one place that gets right
// what each used to write by hand — a second Start, a Stop without Start, a second
// Stop, a Stop whose caller stops waiting. It follows River's internal startstop
// package in shape.
//
// It lives under runner, where most of its users are, because the top level is fixed
// (cmd, web, handlers, models, runner, static, migrations) and none of the others is
// a neutral home: models may import only models/contract and models/formats. It
// imports nothing but the standard library, so handlers (which already use a few
// runner packages) may import it without pulling in the runner or risking a cycle;
// keep it that way.
package startstop

import (
	"context"
	"errors"
	"sync"
)

// ErrStop is the cause a service's context is cancelled with when Stop is called, so
// that work cut short can tell a controlled stop from its caller's cancellation.
var ErrStop = errors.New("service stopping")

// Service is what a background service offers: Start backgrounds the service and
// returns once it is under way (or failed to start); Stop ends it and returns once it
// has ended, or with ctx's error when ctx ends first. Stop tolerates being called
// without Start and being called twice.
type Service interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Base gives a service a race-free start and stop. Embed it, call StartInit (or
// StartInitOnce) first thing in Start, run the service's work in a goroutine that
// calls the returned stopped function when it ends, and use Base's Stop, or StopInit
// for a stop of several phases. The zero value is ready to use.
type Base struct {
	mu      sync.Mutex
	cancel  context.CancelCauseFunc
	started chan struct{}
	stopped chan struct{}
	ran     bool // started at least once: StartInitOnce refuses
}

// StartInit prepares a start: it returns the context the service runs with (cancelled
// with ErrStop at Stop), whether to start (false while the service runs), and two
// functions: started, to call once the service is under way (Started waits for it),
// and stopped, to call exactly once when its work has ended — also when starting
// failed after StartInit said to start, or the service can never start again.
// stopped implies started.
func (b *Base) StartInit(ctx context.Context) (context.Context, bool, func(), func()) {
	return b.startInit(ctx, false)
}

// StartInitOnce is StartInit for a service that runs once: after its first start it
// never says to start again, stopped or not.
func (b *Base) StartInitOnce(ctx context.Context) (context.Context, bool, func(), func()) {
	return b.startInit(ctx, true)
}

func (b *Base) startInit(ctx context.Context, once bool) (context.Context, bool, func(), func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// stopped, not started, marks a running service: Started may have made started
	// before any start.
	if b.stopped != nil || (once && b.ran) {
		return ctx, false, nil, nil
	}
	b.ran = true
	if b.started == nil {
		b.started = make(chan struct{})
	}
	startedCh, stoppedCh := b.started, make(chan struct{})
	b.stopped = stoppedCh
	ctx, b.cancel = context.WithCancelCause(ctx)
	started := sync.OnceFunc(func() { close(startedCh) })
	return ctx, true, started, func() {
		started() // whoever waits for the start must not wait for ever
		close(stoppedCh)
	}
}

// Started returns a channel closed once the service is under way, or has stopped
// without getting there. Called before Start, it returns the channel that start will
// close.
func (b *Base) Started() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started == nil {
		b.started = make(chan struct{})
	}
	return b.started
}

// Stopped returns a channel closed when the running service's work has ended, or nil
// when the service is not running.
func (b *Base) Stopped() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stopped
}

// Running reports whether the service was started and has not been stopped since.
func (b *Base) Running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stopped != nil
}

// Stop cancels the service's context with ErrStop and waits for its work to end, or
// for ctx: then it returns ctx's error and a later Stop waits again. Calling it
// without Start, or again after it returned nil, does nothing.
func (b *Base) Stop(ctx context.Context) error {
	ok, stopped, finish := b.StopInit()
	if !ok {
		return nil
	}
	select {
	case <-stopped:
		finish(true)
		return nil
	case <-ctx.Done():
		finish(false)
		return ctx.Err()
	}
}

// StopInit begins a stop for a service whose Stop has phases of its own: it cancels
// the service's context with ErrStop and returns whether there is anything to stop,
// the channel its work closes when it ends, and finish, to call once the stop is
// over: with true when the service has stopped (a restartable service may then start
// again), with false to leave it stopping for a later Stop. No lock is held in
// between, so the service's work may call Running while it winds down.
func (b *Base) StopInit() (bool, <-chan struct{}, func(didStop bool)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped == nil {
		return false, nil, func(bool) {}
	}
	b.cancel(ErrStop)
	stopped := b.stopped
	return true, stopped, func(didStop bool) {
		b.mu.Lock()
		defer b.mu.Unlock()
		// Two Stops may have waited for the same run; only the first resets it.
		if didStop && b.stopped == stopped {
			b.started, b.stopped = nil, nil
		}
	}
}

// StopAll stops services in the reverse of the order given (the order they were
// started in), each whatever the others returned, and returns the first error.
func StopAll(ctx context.Context, services ...Service) error {
	var first error
	for i := len(services) - 1; i >= 0; i-- {
		if err := services[i].Stop(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}
