package store

import (
	"bytes"
	"context"
	"database/sql/driver"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/countersign/countersign/models"
)

// workChannel is the PostgreSQL channel on which a transaction that may have made work
// claimable says so (pg_notify in the transaction, delivered when it commits). Runners
// wake their claim loop on it instead of on every commit (countersign_events): most
// commits (a task started, an attempt finished, a check recorded) give no runner
// anything to claim, and waking every runner on each of them made every runner try a
// claim per commit.
const workChannel = "countersign_work"

// turnChannel announces a claim turn let go (ClaimTurn's release).
const turnChannel = "countersign_turn"

// claimTurnKey is the advisory lock a runner holds while it claims for a work-ready
// wake-up (ClaimTurn). Distinct from the migration and publisher keys.
const claimTurnKey = 0x636c61696d7475 // "claimtu"

// taskWakes are the task events after which work may be claimable: the task was
// created, (re)assigned, sent back to work, answered, given budget, or released as a
// workflow's next step; or cancelled (its agent's slot may be free). A transaction
// whose last event of a task is another one (a claim's task.started) made nothing
// claimable with that task.
var taskWakes = map[string]bool{
	"task.created": true, "task.assigned": true, "task.reassigned": true, "task.retried": true,
	"task.reopened": true, "task.rejected": true, "task.verification_rejected": true,
	"task.answered": true, "task.released": true, "task.cancelled": true, "task.budget": true,
}

// depWakes are the task events after which the tasks that depend on it may be
// claimable (their dependency is verified).
var depWakes = map[string]bool{"task.verified": true, "task.accepted": true}

// otherWakes are the other events that may make work claimable: an agent enabled, its
// concurrency or roles changed, a new agent, an advisory hold resolved, a goal's
// budget changed.
var otherWakes = map[string]bool{
	models.AgentChangedEvent: true, "agent.created": true, "inbox.resolved": true, "goal.budget": true,
}

// wakesClaims reports whether events (one transaction's, in order) may have made work
// claimable at once (now), or only if a task depends on one of deps. An attempt that
// ended as an infrastructure failure may have let its lease go (a runner stopping, a
// lease lost): it wakes too.
func wakesClaims(events []*models.Event) (now bool, deps []int64) {
	last := map[int64]string{}
	var order []int64
	for _, e := range events {
		switch {
		case otherWakes[e.Type]:
			now = true
		case e.Type == "attempt.finished" && bytes.Contains(e.Data, []byte(`"outcome":"`+models.OutcomeInfra+`"`)):
			now = true
		case e.TaskID != nil && strings.HasPrefix(e.Type, "task."):
			if _, ok := last[*e.TaskID]; !ok {
				order = append(order, *e.TaskID)
			}
			last[*e.TaskID] = e.Type
		}
	}
	for _, id := range order {
		switch {
		case taskWakes[last[id]]:
			now = true
		case depWakes[last[id]]:
			deps = append(deps, id)
		}
	}
	return now, deps
}

// signalWork announces, in the transaction, that it may have made work claimable
// (see wakesClaims): on PostgreSQL with pg_notify on workChannel, delivered at commit
// to every listening runner; it reports whether the DB is to tell its own subscribers
// after the commit (SQLite, where there is no LISTEN).
func (o *ops) signalWork(ctx context.Context) (bool, error) {
	now, deps := wakesClaims(o.tx.events)
	if !now && len(deps) > 0 {
		var unknown []int64
		for _, id := range deps {
			if !o.tx.noDependents[id] {
				unknown = append(unknown, id)
			}
		}
		if len(unknown) > 0 {
			var n int64
			if err := o.q(ctx).Table("task_deps").Where("depends_on_id IN ?", unknown).Limit(1).Count(&n).Error; err != nil {
				return false, mapError(err, "task dependencies")
			}
			now = n > 0
		}
	}
	if !now {
		return false, nil
	}
	if o.db.dialect != DialectPostgres {
		return true, nil
	}
	if err := o.q(ctx).Exec("SELECT pg_notify(?, '')", workChannel).Error; err != nil {
		return false, fmt.Errorf("store: notify %s: %w", workChannel, err)
	}
	return false, nil
}

// workSignals fans work-ready wake-ups out to subscribers (a hub of counters).
type workSignals struct {
	hub *hub
	seq atomic.Int64
}

func (w *workSignals) publish() { w.hub.publish(w.seq.Add(1)) }

// SubscribeWork returns a channel that receives a value whenever a committed
// transaction may have made work claimable (a task created, assigned, retried,
// released; a dependency verified; an agent created or changed; an advisory hold
// resolved): on PostgreSQL from every process (LISTEN countersign_work), on SQLite
// from this DB's own transactions. Like Subscribe, the channel holds at most one
// pending value and closes when ctx ends or the DB closes.
func (d *DB) SubscribeWork(ctx context.Context) <-chan int64 {
	d.startListener()
	return d.work.hub.subscribe(ctx)
}

// SubscribeTurns returns a channel that receives a value whenever a runner lets the
// claim turn go (PostgreSQL only: on SQLite the turn is never held against anyone).
// Notifications reach each listener in commit order, so a runner that hears its own
// release has heard every work-ready signal committed before it.
func (d *DB) SubscribeTurns(ctx context.Context) <-chan int64 {
	d.startListener()
	return d.turns.hub.subscribe(ctx)
}

// ClaimTurn takes the claim turn for a work-ready wake-up: every runner hears each
// one, and only the runner that holds the turn claims for it (the others drop it:
// the holder claims everything claimable, since agents' concurrency is counted in the
// database, and it claims again for any wake-up that arrives while it holds the
// turn). ok is false when another runner holds it. On PostgreSQL the turn is a
// session advisory lock on a connection of the pool, held until release, which
// announces it free on turnChannel (SubscribeTurns), and must be called once; on
// SQLite (one process) there is no turn to hold: ok, and release is nil.
func (d *DB) ClaimTurn(ctx context.Context) (release func(), ok bool, err error) {
	if d.dialect != DialectPostgres {
		return nil, true, nil
	}
	conn, err := d.sqlDB.Conn(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("store: claim turn: %w", err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1)", int64(claimTurnKey)).Scan(&ok); err != nil || !ok {
		conn.Close()
		if err != nil {
			return nil, false, fmt.Errorf("store: claim turn: %w", err)
		}
		return nil, false, nil
	}
	return func() {
		// A failed unlock leaves the lock with the connection: closing it below
		// drops the connection from the pool (database/sql discards a conn whose
		// last use failed), and the session's end releases the lock.
		_, uerr := conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1), pg_notify($2, '')", int64(claimTurnKey), turnChannel)
		if uerr != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}, true, nil
}
