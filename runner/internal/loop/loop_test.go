package loop

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestLoop: a pass runs at Start and every interval, Start twice is refused, and Stop
// waits for the pass under way, twice without harm.
func TestLoop(t *testing.T) {
	var l Loop
	var passes atomic.Int32
	running := make(chan struct{}, 10)
	pass := func(ctx context.Context) {
		passes.Add(1)
		select {
		case running <- struct{}{}:
		default:
		}
	}
	if err := l.Start(context.Background(), 10*time.Millisecond, true, pass); err != nil {
		t.Fatal(err)
	}
	if err := l.Start(context.Background(), time.Second, true, pass); err == nil {
		t.Fatal("started twice")
	}
	<-running
	<-running // the second pass came from the ticker
	for range 2 {
		if err := l.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	n := passes.Load()
	time.Sleep(30 * time.Millisecond)
	if passes.Load() != n {
		t.Fatal("a pass ran after Stop")
	}
}
