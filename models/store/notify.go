package store

import (
	"context"
	"sync"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/jackc/pgx/v5"
)

// notifyChannel is the PostgreSQL channel on which a trigger (migration 0003)
// announces the largest id of every insert into events, when its transaction commits.
const notifyChannel = "countersign_events"

// hub fans the newest committed event id out to subscribers. Each subscriber channel
// has room for one value and always holds the newest: a slow reader misses
// intermediate ids, never the latest.
type hub struct {
	mu     sync.Mutex
	subs   map[chan int64]struct{}
	last   int64 // the largest id published; older ids are ignored
	closed bool
}

func newHub() *hub { return &hub{subs: map[chan int64]struct{}{}} }

// subscribe registers a channel that is closed when ctx ends or the hub closes.
func (h *hub) subscribe(ctx context.Context) <-chan int64 {
	ch := make(chan int64, 1)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		close(ch)
		return ch
	}
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	context.AfterFunc(ctx, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if _, ok := h.subs[ch]; ok {
			delete(h.subs, ch)
			close(ch)
		}
	})
	return ch
}

// publish tells every subscriber about id unless a newer id was already published
// (the same commit is heard both locally and through LISTEN).
func (h *hub) publish(id int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if id <= h.last {
		return
	}
	h.last = id
	for ch := range h.subs {
		// Replace a pending older value with the newest one. Sends happen only under
		// h.mu, so the channel has room after the drain.
		select {
		case <-ch:
		default:
		}
		ch <- id
	}
}

// latest returns the largest id published.
func (h *hub) latest() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// close closes every subscriber channel; later subscriptions get a closed channel.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for ch := range h.subs {
		delete(h.subs, ch)
		close(ch)
	}
}

// Subscribe returns a channel that receives the newest event id whenever events are
// committed: after each local commit that appended events, and on PostgreSQL also for
// commits of other processes (LISTEN countersign_events). On PostgreSQL the id is the
// event horizon (see ListEvents): every event up to it has committed, so ListEvents
// after an earlier id reaches it. The channel holds at most one value, the newest,
// and closes when ctx ends or the DB closes.
func (d *DB) Subscribe(ctx context.Context) <-chan int64 {
	d.startListener()
	return d.hub.subscribe(ctx)
}

// startListener starts, once, the LISTEN connection on PostgreSQL.
func (d *DB) startListener() {
	if d.dialect == DialectPostgres {
		d.listenOnce.Do(func() {
			d.wg.Add(2)
			go func() {
				defer d.wg.Done()
				d.listen(d.background)
			}()
			go func() {
				defer d.wg.Done()
				d.followHorizon(d.background)
			}()
		})
	}
}

// committed is told the largest event id a local commit appended. SQLite commits ids
// in order, so it is published at once. On PostgreSQL it waits (awaitHorizon) until
// readers can see the commit's events, so that whoever committed reads them back,
// and then announces them; if that takes too long, or under models.WithoutEventWait, it
// leaves them to followHorizon.
func (d *DB) committed(ctx context.Context, maxEvent int64) {
	if d.dialect != DialectPostgres {
		d.hub.publish(maxEvent)
		return
	}
	if models.SkipsEventWait(ctx) {
		d.kickHorizon()
		return
	}
	if h := d.awaitHorizon(ctx, maxEvent); h >= maxEvent {
		d.hub.publish(h)
		return
	}
	d.kickHorizon()
}

// maxHorizonWait bounds how long a commit waits for its events to be readable: only
// as long as transactions of the database older than it stay open, which are short,
// unless one (a long import, say) is not.
const maxHorizonWait = 5 * time.Second

// awaitHorizon returns the event horizon once it has reached id, or the last one
// seen when maxHorizonWait or ctx ends first.
func (d *DB) awaitHorizon(ctx context.Context, id int64) int64 {
	deadline := time.Now().Add(maxHorizonWait)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		var h int64
		if err := d.sqlDB.QueryRowContext(ctx, "SELECT countersign_event_horizon($1)", id-1).Scan(&h); err != nil || h >= id {
			return h
		}
		if time.Now().Add(pause).After(deadline) {
			return h
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return h
		case <-t.C:
		}
	}
}

// kickHorizon asks followHorizon for another look; kicks coalesce.
func (d *DB) kickHorizon() {
	select {
	case d.horizonKick <- struct{}{}:
	default:
	}
}

// horizonLookGap is the least time between two of followHorizon's looks: under load
// every commit kicks it, and one look announces the events of all the commits before
// it, so a look per commit would cost a query per commit and announce no sooner.
const horizonLookGap = 20 * time.Millisecond

// followHorizon publishes the event horizon each time a commit may have moved it
// (kickHorizon), at most once per horizonLookGap. A commit whose events wait behind a
// smaller id that another transaction has not committed yet announces nothing that a
// reader could fetch: while events are visible beyond the horizon it looks again,
// backing off up to a second, so that they are announced when the transaction before
// them ends, even if that one appended nothing.
func (d *DB) followHorizon(ctx context.Context) {
	var backoff time.Duration
	var last time.Time
	for {
		var again <-chan time.Time
		var t *time.Timer
		if backoff > 0 {
			t = time.NewTimer(backoff)
			again = t.C
		}
		select {
		case <-ctx.Done():
			if t != nil {
				t.Stop()
			}
			return
		case <-d.horizonKick:
		case <-again:
		}
		if t != nil {
			t.Stop()
		}
		if !sleepCtx(ctx, horizonLookGap-time.Since(last)) {
			return
		}
		last = time.Now()
		var horizon, newest int64
		err := d.sqlDB.QueryRowContext(ctx, "SELECT countersign_event_horizon($1), COALESCE((SELECT MAX(id) FROM events), 0)",
			d.hub.latest()).Scan(&horizon, &newest)
		if err == nil && horizon > 0 {
			d.hub.publish(horizon)
		}
		switch {
		case err == nil && newest <= horizon:
			backoff = 0
		case backoff == 0:
			backoff = 2 * time.Millisecond
		default:
			backoff = min(2*backoff, time.Second)
		}
	}
}

// listen keeps a dedicated connection listening on notifyChannel, workChannel and
// turnChannel (workready.go) until ctx ends, reconnecting with backoff. Each event
// notification wakes followHorizon. After each (re)connect it wakes followHorizon and
// publishes a work-ready signal and a turn let go, so that nothing committed while it
// was disconnected goes unannounced.
func (d *DB) listen(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		// The connection was lost or refused: try again after the backoff.
		_ = d.listenConn(ctx, func() { backoff = 100 * time.Millisecond })
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// listenConn runs one LISTEN connection until it fails or ctx ends; connected is
// called once it listens.
func (d *DB) listenConn(ctx context.Context, connected func()) error {
	dialCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.Connect(dialCtx, d.url)
	cancel()
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel+"; LISTEN "+workChannel+"; LISTEN "+turnChannel); err != nil {
		return err
	}
	connected()
	d.kickHorizon()
	// Work may have become claimable, and a turn let go, while no one listened.
	d.work.publish()
	d.turns.publish()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		switch n.Channel {
		case workChannel:
			d.work.publish()
		case turnChannel:
			d.turns.publish()
		default:
			d.kickHorizon()
		}
	}
}

// sleepCtx waits d (nothing when d is not positive) and reports whether ctx is still
// live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
