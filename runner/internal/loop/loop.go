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

// Loop runs a pass at Start and then every interval until Stop or the context of
// Start ends. The zero value is ready to use.
type Loop struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs pass now and then every interval, each time with a context that ends at
// Stop; it refuses to start twice.
func (l *Loop) Start(ctx context.Context, every time.Duration, pass func(ctx context.Context)) error {
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
		for {
			pass(ctx)
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
