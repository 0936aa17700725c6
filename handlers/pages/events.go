package pages

import (
	"context"

	"github.com/countersign/countersign/models"
)

// lastEventID returns the id of the newest event. The store lists events only
// forwards, so it probes from the last id seen (usually one short query), then
// doubles and bisects when far behind: O(log n) queries in the worst case.
func (p *Pages) lastEventID(ctx context.Context) (int64, error) {
	st := p.d.Service.Store()
	lo := p.lastEvent.Load()
	const step = 64
	evs, err := st.ListEvents(ctx, lo, step)
	if err != nil {
		return 0, err
	}
	if len(evs) < step {
		if n := len(evs); n > 0 {
			lo = evs[n-1].ID
		}
		p.noteEvent(lo)
		return lo, nil
	}
	lo = evs[len(evs)-1].ID // an event with this id exists: the newest is >= lo
	exists := func(after int64) (bool, error) {
		e, err := st.ListEvents(ctx, after, 1)
		return len(e) > 0, err
	}
	hi := lo + step
	for {
		more, err := exists(hi)
		if err != nil {
			return 0, err
		}
		if !more {
			break
		}
		lo, hi = hi, lo+2*(hi-lo)
	}
	// newest is in (lo, hi]: the smallest x with no event after it.
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		more, err := exists(mid)
		if err != nil {
			return 0, err
		}
		if more {
			lo = mid
		} else {
			hi = mid
		}
	}
	p.noteEvent(hi)
	return hi, nil
}

// noteEvent remembers the newest event id seen, so the next probe starts there.
func (p *Pages) noteEvent(id int64) {
	for {
		cur := p.lastEvent.Load()
		if id <= cur || p.lastEvent.CompareAndSwap(cur, id) {
			return
		}
	}
}

// recentEvents returns up to n of the newest events, newest first.
func (p *Pages) recentEvents(ctx context.Context, n int) ([]models.Event, int64, error) {
	last, err := p.lastEventID(ctx)
	if err != nil {
		return nil, 0, err
	}
	after := max(last-int64(n)*2, 0)
	evs, err := p.d.Service.Store().ListEvents(ctx, after, n*2)
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
	evs, err := p.d.Service.Store().ListTaskEvents(ctx, t.ID, maxTimeline)
	if err != nil {
		return nil, false, err
	}
	return evs, len(evs) == maxTimeline, nil
}
