package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/countersign/countersign/models"
)

// eventRecord is a row of events; data is JSON text.
type eventRecord struct {
	ID        int64 `gorm:"primaryKey"`
	Type      string
	TaskID    *int64
	GoalID    *int64
	ActorID   *int64
	AgentID   *int64
	Data      string
	CreatedAt time.Time `gorm:"autoCreateTime:false"`
}

func (eventRecord) TableName() string { return "events" }

func fromEventRecord(r *eventRecord) *models.Event {
	return &models.Event{
		ID:        r.ID,
		Type:      r.Type,
		TaskID:    r.TaskID,
		GoalID:    r.GoalID,
		ActorID:   r.ActorID,
		AgentID:   r.AgentID,
		Data:      rawOrNil(r.Data),
		CreatedAt: normTime(r.CreatedAt),
	}
}

// AppendEvent stores the event; its ID (strictly increasing) is assigned when its
// transaction commits, and a zero CreatedAt is set to now. Readers see ids in order
// and never one before a smaller id that may still commit (SQLite: one writer at a
// time; PostgreSQL: the event horizon of ListEvents, without a lock). Subscribers
// hear of it once its transaction commits; outside InTx it runs in a transaction of
// its own. Reads through the same transaction do not see it: appends are held until
// just before the commit (see appends.go).
func (o *ops) AppendEvent(ctx context.Context, e *models.Event) error {
	return o.AppendEvents(ctx, []*models.Event{e})
}

// AppendEvents stores es in order, as AppendEvent would one by one.
func (o *ops) AppendEvents(ctx context.Context, es []*models.Event) error {
	if len(es) == 0 {
		return nil
	}
	if o.tx == nil {
		return o.atomic(ctx, func(o *ops) error { return o.AppendEvents(ctx, es) })
	}
	o.tx.events = append(o.tx.events, es...)
	return nil
}

// insertEvents writes the held events in one statement and sets their IDs.
func (o *ops) insertEvents(ctx context.Context, es []*models.Event) error {
	recs := make([]eventRecord, len(es))
	for i, e := range es {
		if e.CreatedAt.IsZero() {
			e.CreatedAt = now()
		}
		recs[i] = eventRecord{
			Type:      e.Type,
			TaskID:    e.TaskID,
			GoalID:    e.GoalID,
			ActorID:   e.ActorID,
			AgentID:   e.AgentID,
			Data:      string(e.Data),
			CreatedAt: normTime(e.CreatedAt),
		}
	}
	if o.db.dialect == DialectPostgres {
		if err := o.insertEventsPostgres(ctx, recs); err != nil {
			return err
		}
	} else if err := o.q(ctx).Create(&recs).Error; err != nil {
		return mapError(err, "event")
	}
	for i, e := range es {
		o.tx.maxEvent = max(o.tx.maxEvent, recs[i].ID)
		*e = *fromEventRecord(&recs[i])
	}
	return nil
}

// insertEventsPostgres inserts recs, in order, through countersign_insert_events
// (migration 0027), which writes them the way the event horizon relies on: in a
// subtransaction whose id comes after every one of their ids was drawn. Code that
// inserts events another way (pgx on the claim path) must call it too.
func (o *ops) insertEventsPostgres(ctx context.Context, recs []eventRecord) error {
	n := len(recs)
	types, datas := make([]string, n), make([]string, n)
	tasks, goals, actors, agents := make([]*int64, n), make([]*int64, n), make([]*int64, n), make([]*int64, n)
	created := make([]time.Time, n)
	for i, r := range recs {
		types[i], datas[i], created[i] = r.Type, r.Data, r.CreatedAt
		tasks[i], goals[i], actors[i], agents[i] = r.TaskID, r.GoalID, r.ActorID, r.AgentID
	}
	// Through the connection, not gorm, which would expand the slices into lists.
	rows, err := o.q(ctx).Statement.ConnPool.QueryContext(ctx,
		"SELECT countersign_insert_events($1, $2, $3, $4, $5, $6, $7)", types, tasks, goals, actors, agents, datas, created)
	if err != nil {
		return mapError(err, "event")
	}
	defer rows.Close()
	ids := make([]int64, 0, n)
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return mapError(err, "event")
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return mapError(err, "event")
	}
	if len(ids) != n {
		return fmt.Errorf("store: inserted %d events, want %d", len(ids), n)
	}
	slices.Sort(ids) // drawn in recs' order
	for i := range recs {
		recs[i].ID = ids[i]
	}
	return nil
}

// ListEvents returns up to limit (default 100, at most 1000) events with ID > afterID,
// oldest first. On PostgreSQL it stops at the event horizon (migration 0027): an event
// whose id is above one that may still commit is left for a later call, so a reader
// that follows the ids skips none.
func (o *ops) ListEvents(ctx context.Context, afterID int64, limit int) ([]models.Event, error) {
	var recs []eventRecord
	q := o.q(ctx).Where("id > ?", afterID)
	if o.db.dialect == DialectPostgres {
		q = q.Where("id <= (SELECT countersign_event_horizon(?))", o.db.horizonFloor(afterID))
	}
	err := q.Order("id").Limit(listLimit(limit)).Find(&recs).Error
	if err != nil {
		return nil, mapError(err, "events")
	}
	out := make([]models.Event, 0, len(recs))
	for i := range recs {
		out = append(out, *fromEventRecord(&recs[i]))
	}
	return out, nil
}

// ListTaskEvents returns the newest limit events of one task, oldest first.
func (o *ops) ListTaskEvents(ctx context.Context, taskID int64, limit int) ([]models.Event, error) {
	return o.newestEventsOf(ctx, "task_id", taskID, limit)
}

// ListEventsOfType returns up to limit (default 100, at most 1000) events of type typ
// with an ID below beforeID (any when 0), newest first.
func (o *ops) ListEventsOfType(ctx context.Context, typ string, beforeID int64, limit int) ([]models.Event, error) {
	var recs []eventRecord
	q := o.q(ctx).Where("type = ?", typ)
	if beforeID > 0 {
		q = q.Where("id < ?", beforeID)
	}
	if err := q.Order("id DESC").Limit(listLimit(limit)).Find(&recs).Error; err != nil {
		return nil, mapError(err, "events")
	}
	out := make([]models.Event, len(recs))
	for i := range recs {
		out[i] = *fromEventRecord(&recs[i])
	}
	return out, nil
}

// ListAgentEvents returns the newest limit events about one agent, oldest first.
func (o *ops) ListAgentEvents(ctx context.Context, agentID int64, limit int) ([]models.Event, error) {
	return o.newestEventsOf(ctx, "agent_id", agentID, limit)
}

// newestEventsOf returns the newest limit events whose column (task_id or agent_id,
// both indexed with id) is id, oldest first.
func (o *ops) newestEventsOf(ctx context.Context, column string, id int64, limit int) ([]models.Event, error) {
	var recs []eventRecord
	err := o.q(ctx).Where(column+" = ?", id).Order("id DESC").Limit(listLimit(limit)).Find(&recs).Error
	if err != nil {
		return nil, mapError(err, "events")
	}
	out := make([]models.Event, len(recs))
	for i := range recs {
		out[len(recs)-1-i] = *fromEventRecord(&recs[i])
	}
	return out, nil
}

// horizonFloor is where the event horizon is looked for from: after, or the horizon
// this process last announced when that is higher. Every id up to an announced horizon
// is decided for good, while a fresh computation can come out lower for a moment (a
// transaction of another database that ends while the horizon is computed is counted
// as running, see migration 0027): without the floor, a commit that returned once its
// events were readable (InTx) could be followed by a read that does not show them.
func (d *DB) horizonFloor(after int64) int64 { return max(after, d.hub.latest()) }

// LastEventID returns the id of the newest event, 0 when there is none; on PostgreSQL
// the newest below the event horizon (see ListEvents), so that a reader resuming
// after it misses no event that commits later with a smaller id.
func (o *ops) LastEventID(ctx context.Context) (int64, error) {
	var id int64
	q := o.q(ctx).Model(&eventRecord{}).Select("COALESCE(MAX(id), 0)")
	if o.db.dialect == DialectPostgres {
		q = o.q(ctx).Raw("SELECT countersign_event_horizon(?)", o.db.horizonFloor(0))
	}
	if err := q.Scan(&id).Error; err != nil {
		return 0, mapError(err, "events")
	}
	return id, nil
}
