package store

import (
	"context"
	"strconv"
	"sync"
	"time"

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
// commits of other processes (LISTEN countersign_events). The channel holds at most one
// value, the newest, and closes when ctx ends or the DB closes.
func (d *DB) Subscribe(ctx context.Context) <-chan int64 {
	d.startListener()
	return d.hub.subscribe(ctx)
}

// startListener starts, once, the LISTEN connection on PostgreSQL.
func (d *DB) startListener() {
	if d.dialect == DialectPostgres {
		d.listenOnce.Do(func() {
			d.wg.Add(1)
			go func() {
				defer d.wg.Done()
				d.listen(d.background)
			}()
		})
	}
}

// listen keeps a dedicated connection listening on notifyChannel, workChannel and
// turnChannel (workready.go) until ctx ends, reconnecting with backoff. After each
// (re)connect it publishes the current maximum event id, a work-ready signal and a
// turn let go, so that nothing committed while it was disconnected goes unannounced.
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
	var maxID int64
	if err := conn.QueryRow(ctx, "SELECT COALESCE(MAX(id), 0) FROM events").Scan(&maxID); err != nil {
		return err
	}
	if maxID > 0 {
		d.hub.publish(maxID)
	}
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
			continue
		case turnChannel:
			d.turns.publish()
			continue
		}
		if id, err := strconv.ParseInt(n.Payload, 10, 64); err == nil {
			d.hub.publish(id)
		}
	}
}
