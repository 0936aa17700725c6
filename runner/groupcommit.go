package runner

import (
	"sync"
	"time"
)

// groupCommit runs one statement for the requests of callers that arrive together, as
// a database's group commit does: a caller that finds no batch running runs one with
// whatever is pending; callers that arrive meanwhile wait, and when that batch is done
// the first of them runs the next one, with all of them. There is no goroutine to
// start or stop, each caller returns once its own request is done, and none runs more
// than the one batch its own request is in.
//
// With a window the caller that is to run a batch first waits that long for others to
// join it (River's BatchCompleter collects for a moment too): for work whose callers
// finish close together but rarely while a batch runs. With max, a batch takes at
// most max requests; the rest are the next batch's.
type groupCommit[T any] struct {
	do     func(batch []T) error // runs one batch; its error is every caller's in it
	window time.Duration         // how long a batch's runner waits for more requests; 0: none
	max    int                   // the most requests in one batch; 0: no bound

	mu      sync.Mutex
	pending []groupReq[T]
	running bool
}

type groupReq[T any] struct {
	item T
	done chan error    // the error of the batch that held the request
	lead chan struct{} // the request's caller is to run the next batch
}

// submit adds item to the next batch and returns that batch's error.
func (g *groupCommit[T]) submit(item T) error {
	req := groupReq[T]{item: item, done: make(chan error, 1), lead: make(chan struct{}, 1)}
	g.mu.Lock()
	g.pending = append(g.pending, req)
	if g.running {
		g.mu.Unlock()
		select {
		case err := <-req.done:
			return err
		case <-req.lead:
		}
		g.mu.Lock()
	}
	g.running = true
	if g.window > 0 {
		g.mu.Unlock()
		time.Sleep(g.window)
		g.mu.Lock()
	}
	batch := g.pending
	g.pending = nil
	if g.max > 0 && len(batch) > g.max {
		batch, g.pending = batch[:g.max:g.max], batch[g.max:]
	}
	g.mu.Unlock()

	items := make([]T, len(batch))
	for i, r := range batch {
		items[i] = r.item
	}
	err := g.do(items)
	for _, r := range batch {
		r.done <- err
	}

	g.mu.Lock()
	if len(g.pending) > 0 {
		g.pending[0].lead <- struct{}{} // still running: the next batch is theirs
	} else {
		g.running = false
	}
	g.mu.Unlock()
	return err
}
