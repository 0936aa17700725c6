package pages

import (
	"context"

	"github.com/countersign/countersign/models"
)

// lastEventID returns the id of the newest event.
func (p *Pages) lastEventID(ctx context.Context) (int64, error) {
	return p.svc.Store().LastEventID(ctx)
}

// recentEvents returns up to n of the newest events, newest first.
func (p *Pages) recentEvents(ctx context.Context, n int) ([]models.Event, int64, error) {
	last, err := p.lastEventID(ctx)
	if err != nil {
		return nil, 0, err
	}
	after := max(last-int64(n)*2, 0)
	evs, err := p.svc.Store().ListEvents(ctx, after, n*2)
	if err != nil {
		return nil, 0, err
	}
	out := make([]models.Event, 0, n)
	for i := len(evs) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, evs[i])
	}
	return out, last, nil
}

// maxTimeline is how many of a task's newest events its timeline shows.
const maxTimeline = 1000

// taskEvents returns the events of task t, oldest first: its newest maxTimeline
// events. truncated reports that older ones were left out.
func (p *Pages) taskEvents(ctx context.Context, t *models.Task) (out []models.Event, truncated bool, err error) {
	evs, err := p.svc.Store().ListTaskEvents(ctx, t.ID, maxTimeline)
	if err != nil {
		return nil, false, err
	}
	return evs, len(evs) == maxTimeline, nil
}
