// Package loop runs one function periodically in the background between Start and an
// idempotent Stop: the shape every periodic pass of the runner shares (the drift
// recheck, the inbox sweep, the janitor).
package loop

import (
	"context"
	"errors"
	"time"

	"github.com/countersign/countersign/runner/startstop"
)

// Loop runs a pass every interval (and at Start when asked to) until Stop or the
// context of Start ends. The zero value is ready to use; Stop is startstop.Base's.
type Loop struct {
	startstop.Base
}

// Start runs pass every interval, and first at once when atOnce is set, each time
// with a context that ends at Stop; it refuses to start twice. A costly pass (the
// drift recheck) waits for its first interval, so that start-up does not pay for it.
func (l *Loop) Start(ctx context.Context, every time.Duration, atOnce bool, pass func(ctx context.Context)) error {
	ctx, ok, started, stopped := l.StartInit(ctx)
	if !ok {
		return errors.New("loop: already started")
	}
	go func() {
		defer stopped()
		started()
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
	}()
	return nil
}
