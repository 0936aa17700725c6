package runner

import "sync"

// groupCommit runs one statement for the requests of callers that arrive together, as
// a database's group commit does: the first caller runs a batch with whatever is
// pending, callers that arrive meanwhile wait and are served by the next batch, which
// that same caller runs. There is no goroutine to start or stop, and a caller returns
// only once its own request is done: a batch delays nobody by more than the batch
// before it.
type groupCommit[T any] struct {
	do func(batch []T) error // runs one batch; its error is every caller's

	mu      sync.Mutex
	pending []groupReq[T]
	running bool
}

type groupReq[T any] struct {
	item T
	done chan error
}

// submit adds item to the next batch and returns that batch's error.
func (g *groupCommit[T]) submit(item T) error {
	req := groupReq[T]{item: item, done: make(chan error, 1)}
	g.mu.Lock()
	g.pending = append(g.pending, req)
	if g.running {
		g.mu.Unlock()
		return <-req.done
	}
	g.running = true
	for len(g.pending) > 0 {
		batch := g.pending
		g.pending = nil
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
	}
	g.running = false
	g.mu.Unlock()
	return <-req.done
}
