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

// queueCache keeps each person's queue count for as long as no new event was
// committed, as countCache does the task counts: the nav shows it on every page.
type queueCache struct {
	mu      sync.Mutex
	entries map[int64]queueEntry // by agent id
}

type queueEntry struct{ event, count int64 }

// queueCount returns how many items wait on a as of event last.
func (p *Pages) queueCount(ctx context.Context, a *models.Agent, last int64) (int, error) {
	qc := &p.queues
	qc.mu.Lock()
	if e, ok := qc.entries[a.ID]; ok && e.event == last && last > 0 {
		qc.mu.Unlock()
		return int(e.count), nil
	}
	qc.mu.Unlock()
	n, err := p.svc.Queue.Count(ctx, a)
	if err != nil {
		return 0, err
	}
	p.rememberQueueCount(a, last, n)
	return n, nil
}

// rememberQueueCount keeps n as a's queue count as of event last.
func (p *Pages) rememberQueueCount(a *models.Agent, last int64, n int) {
	qc := &p.queues
	qc.mu.Lock()
	defer qc.mu.Unlock()
	if qc.entries == nil || len(qc.entries) > 10000 {
		qc.entries = map[int64]queueEntry{}
	}
	qc.entries[a.ID] = queueEntry{event: last, count: int64(n)}
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
