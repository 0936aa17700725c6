package pages

import (
	"context"
	"maps"
	"sync"

	"github.com/countersign/countersign/models"
)

// countCache keeps task counts per goal for as long as no new event was committed:
// every change of a task is committed with an event, so an unchanged newest event id
// means unchanged counts. It turns the burst of re-fetches that follows one event
// (every open goal page refreshes live) into one count query.
type countCache struct {
	mu      sync.Mutex
	entries map[int64]countEntry
}

type countEntry struct {
	event  int64
	counts map[models.TaskState]int
}

// goalCounts returns the task counts of goal id (0: all tasks) as of event last.
func (p *Pages) goalCounts(ctx context.Context, id, last int64) (map[models.TaskState]int, error) {
	cc := &p.counts
	cc.mu.Lock()
	if e, ok := cc.entries[id]; ok && e.event == last && last > 0 {
		cc.mu.Unlock()
		return maps.Clone(e.counts), nil
	}
	cc.mu.Unlock()
	counts, err := p.svc.Store().CountTasks(ctx, id)
	if err != nil {
		return nil, err
	}
	cc.mu.Lock()
	if cc.entries == nil || len(cc.entries) > 1000 {
		cc.entries = map[int64]countEntry{}
	}
	cc.entries[id] = countEntry{event: last, counts: maps.Clone(counts)}
	cc.mu.Unlock()
	return counts, nil
}
