package store

import (
	"context"
	"slices"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/countersign/countersign/models"
)

// WriteHeld writes what a runner's claim held back (models.WriteBehind) with one
// statement per table, whatever the number of tasks in the batch: the task rows as one
// multi-row INSERT … ON CONFLICT (id) DO UPDATE of every column UpdateTask writes (the
// rows exist and are locked by the claim, so it only ever updates; the update triggers
// fire as for UpdateTask; SQLite updates them one by one), then the attempts and the tokens as one multi-row INSERT …
// RETURNING id each, whose IDs are set in the caller's values.
func (o *ops) WriteHeld(ctx context.Context, h models.HeldWrites) error {
	if err := o.writeHeldTasks(ctx, h.Tasks); err != nil {
		return err
	}
	if len(h.Attempts) > 0 {
		recs := make([]*attemptRecord, len(h.Attempts))
		for i, a := range h.Attempts {
			if a.StartedAt.IsZero() {
				a.StartedAt = now()
			}
			rec, err := toAttemptRecord(a)
			if err != nil {
				return err
			}
			rec.ID = 0
			recs[i] = rec
		}
		if err := o.q(ctx).Create(&recs).Error; err != nil {
			return mapError(err, "attempt")
		}
		for i, rec := range recs {
			out, err := fromAttemptRecord(rec)
			if err != nil {
				return err
			}
			*h.Attempts[i] = *out
		}
	}
	if len(h.Tokens) > 0 {
		recs := make([]*tokenRecord, len(h.Tokens))
		for i, t := range h.Tokens {
			if t.CreatedAt.IsZero() {
				t.CreatedAt = now()
			}
			recs[i] = toTokenRecord(t)
			recs[i].ID = 0
		}
		if err := o.q(ctx).Create(&recs).Error; err != nil {
			return conflictOr(err, "token", "a token with this hash already exists")
		}
		for i, rec := range recs {
			*h.Tokens[i] = *fromTokenRecord(rec)
		}
	}
	return nil
}

// writeHeldTasks updates the tasks' rows whole, as UpdateTask would one by one.
func (o *ops) writeHeldTasks(ctx context.Context, tasks []*models.Task) error {
	if len(tasks) == 0 {
		return nil
	}
	if o.db.dialect == DialectSQLite {
		// In process, a round trip costs little; and an upsert would run the search
		// index's AFTER INSERT trigger beside its update trigger on SQLite.
		for _, t := range tasks {
			if err := o.UpdateTask(ctx, t); err != nil {
				return err
			}
		}
		return nil
	}
	recs := make([]*taskRecord, len(tasks))
	for i, t := range tasks {
		t.UpdatedAt = now()
		rec, err := toTaskRecord(t)
		if err != nil {
			return err
		}
		recs[i] = rec
	}
	cols, err := o.taskColumns()
	if err != nil {
		return err
	}
	err = o.q(ctx).Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, DoUpdates: clause.AssignmentColumns(cols)}).
		Create(&recs).Error
	if err != nil {
		return mapError(err, "task")
	}
	for i, rec := range recs {
		out, err := fromTaskRecord(rec)
		if err != nil {
			return err
		}
		*tasks[i] = *out
	}
	return nil
}

// taskColumns are the columns UpdateTask writes: all but id, created_at and
// depends_on.
func (o *ops) taskColumns() ([]string, error) {
	stmt := &gorm.Statement{DB: o.g}
	if err := stmt.Parse(&taskRecord{}); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(slices.Clone(stmt.Schema.DBNames), func(c string) bool {
		return c == "id" || c == "created_at" || c == "depends_on"
	}), nil
}

// ListTasksEvents returns the newest limit events of each of the tasks, oldest first,
// in one statement: ListTaskEvents for several tasks (models.TaskEventsReader).
func (o *ops) ListTasksEvents(ctx context.Context, taskIDs []int64, limit int) (map[int64][]models.Event, error) {
	var recs []eventRecord
	newest := o.q(ctx).Raw(`SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY task_id ORDER BY id DESC) AS n
FROM events WHERE task_id IN ?) r WHERE n <= ?`, taskIDs, listLimit(limit))
	if err := o.q(ctx).Where("id IN (?)", newest).Order("id").Find(&recs).Error; err != nil {
		return nil, mapError(err, "events")
	}
	out := make(map[int64][]models.Event, len(taskIDs))
	for i := range recs {
		e := fromEventRecord(&recs[i])
		if e.TaskID != nil {
			out[*e.TaskID] = append(out[*e.TaskID], *e)
		}
	}
	return out, nil
}
