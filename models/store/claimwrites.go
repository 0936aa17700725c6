package store

import (
	"context"
	"slices"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/countersign/countersign/models"
)

// WriteHeld writes what a runner's claim or settle held back (models.WriteBehind) with
// one statement per table, whatever the number of tasks in the batch: the task rows as
// one multi-row INSERT … ON CONFLICT (id) DO UPDATE of every column UpdateTask writes
// (the rows exist and are locked by the claim or settle, so it only ever updates; the
// update triggers fire as for UpdateTask; SQLite updates them one by one), then the
// new attempts as one multi-row INSERT … RETURNING id, the updated attempts as one
// upsert like the tasks', and the tokens as one multi-row INSERT … RETURNING id. The
// IDs are set in the caller's values.
func (o *ops) WriteHeld(ctx context.Context, h models.HeldWrites) error {
	if err := o.writeHeldTasks(ctx, h.Tasks); err != nil {
		return err
	}
	if err := o.writeHeldAttempts(ctx, h.Attempts); err != nil {
		return err
	}
	if err := o.updateHeldAttempts(ctx, h.AttemptUpdates); err != nil {
		return err
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
	// All but created_at and depends_on: the columns UpdateTask writes.
	if err := o.updateWhole(ctx, &recs, &taskRecord{}, "created_at", "depends_on"); err != nil {
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

// updateWhole writes recs (a pointer to a slice of records of record's table, whose
// rows exist) with one multi-row INSERT … ON CONFLICT (id) DO UPDATE of every column
// but id and those kept.
func (o *ops) updateWhole(ctx context.Context, recs, record any, keep ...string) error {
	stmt := &gorm.Statement{DB: o.g}
	if err := stmt.Parse(record); err != nil {
		return err
	}
	cols := slices.DeleteFunc(slices.Clone(stmt.Schema.DBNames), func(c string) bool { return c == "id" || slices.Contains(keep, c) })
	return o.q(ctx).Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, DoUpdates: clause.AssignmentColumns(cols)}).
		Create(recs).Error
}

// writeHeldAttempts inserts new attempts with one statement and sets their IDs.
func (o *ops) writeHeldAttempts(ctx context.Context, atts []*models.Attempt) error {
	if len(atts) == 0 {
		return nil
	}
	for _, a := range atts {
		if a.StartedAt.IsZero() {
			a.StartedAt = now()
		}
	}
	recs, err := attemptRecords(atts)
	if err != nil {
		return err
	}
	for _, rec := range recs {
		rec.ID = 0
	}
	if err := o.q(ctx).Create(&recs).Error; err != nil {
		return mapError(err, "attempt")
	}
	for i, rec := range recs {
		out, err := fromAttemptRecord(rec)
		if err != nil {
			return err
		}
		*atts[i] = *out
	}
	return nil
}

// updateHeldAttempts writes attempts whole, as UpdateAttempt would one by one: on
// PostgreSQL as one multi-row INSERT … ON CONFLICT (id) DO UPDATE of every column but
// the id (the attempts exist: they were created before they could be updated, and no
// trigger watches the table), on SQLite one by one.
func (o *ops) updateHeldAttempts(ctx context.Context, atts []*models.Attempt) error {
	if len(atts) == 0 {
		return nil
	}
	if o.db.dialect == DialectSQLite {
		for _, a := range atts {
			if err := o.UpdateAttempt(ctx, a); err != nil {
				return err
			}
		}
		return nil
	}
	recs, err := attemptRecords(atts)
	if err != nil {
		return err
	}
	return mapError(o.updateWhole(ctx, &recs, &attemptRecord{}), "attempt")
}

// attemptRecords are the records of atts.
func attemptRecords(atts []*models.Attempt) ([]*attemptRecord, error) {
	recs := make([]*attemptRecord, len(atts))
	for i, a := range atts {
		rec, err := toAttemptRecord(a)
		if err != nil {
			return nil, err
		}
		recs[i] = rec
	}
	return recs, nil
}

// LockTasks locks the tasks with these ids for update in one statement and returns
// them in ascending id order, each as LockTask would (models.TasksLocker); ids that do
// not exist are left out.
func (o *ops) LockTasks(ctx context.Context, ids []int64) ([]models.Task, error) {
	var rows []struct {
		Task          taskRecord `gorm:"embedded"`
		HasDependents bool
	}
	q := o.forUpdate(o.q(ctx).Model(&taskRecord{}).
		Select("tasks.*, EXISTS (SELECT 1 FROM task_deps d WHERE d.depends_on_id = tasks.id) AS has_dependents"))
	if err := q.Where("id IN ?", ids).Order("id").Find(&rows).Error; err != nil {
		return nil, mapError(err, "tasks")
	}
	out := make([]models.Task, 0, len(rows))
	for i := range rows {
		if !rows[i].HasDependents {
			o.markNoDependents(rows[i].Task.ID)
		}
		t, err := fromTaskRecord(&rows[i].Task)
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, nil
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

// ListTasksAttempts returns the attempts of each of the tasks, in the order they were
// made, in one statement: ListAttempts for several tasks (models.AttemptsReader).
func (o *ops) ListTasksAttempts(ctx context.Context, taskIDs []int64) (map[int64][]models.Attempt, error) {
	var recs []attemptRecord
	if err := o.q(ctx).Where("task_id IN ?", taskIDs).Order("task_id, number, id").Find(&recs).Error; err != nil {
		return nil, mapError(err, "attempts")
	}
	out := make(map[int64][]models.Attempt, len(taskIDs))
	for i := range recs {
		a, err := fromAttemptRecord(&recs[i])
		if err != nil {
			return nil, err
		}
		out[a.TaskID] = append(out[a.TaskID], *a)
	}
	return out, nil
}
