// Package loop runs one function periodically in the background between Start and an
// idempotent Stop: the shape every periodic pass of the runner shares (the drift
// recheck, the inbox sweep).
package loop

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Loop runs a pass every interval (and at Start when asked to) until Stop or the
// context of Start ends. The zero value is ready to use.
type Loop struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs pass every interval, and first at once when atOnce is set, each time
// with a context that ends at Stop; it refuses to start twice. A costly pass (the
// drift recheck) waits for its first interval, so that start-up does not pay for it.
func (l *Loop) Start(ctx context.Context, every time.Duration, atOnce bool, pass func(ctx context.Context)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		return errors.New("loop: already started")
	}
	ctx, l.cancel = context.WithCancel(ctx)
	l.done = make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for first := true; ; first = false {
			if atOnce || !first {
				pass(ctx)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}(l.done)
	return nil
}

// Stop ends the loop and waits for the pass under way (or for ctx); calling it again,
// or without Start, does nothing.
func (l *Loop) Stop(ctx context.Context) error {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.cancel = nil
	l.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
