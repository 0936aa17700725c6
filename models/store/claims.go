package store

import (
	"context"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/countersign/countersign/models"
)

var _ models.Claimer = (*ops)(nil)

// defaultReadyLimit is how many ready tasks one claim considers when the caller sets
// no limit.
const defaultReadyLimit = 16

// skipLocked locks the rows read for the transaction and skips rows another
// transaction holds, on PostgreSQL. It is FOR NO KEY UPDATE rather than FOR UPDATE for
// the reason forUpdate gives (inserts that only reference a locked row, such as an
// attempt of a claimed task, must not wait for it); it excludes other claims and
// Lock* calls all the same. SQLite needs nothing: a transaction holds the only
// connection and the database's write lock.
func (o *ops) skipLocked(q *gorm.DB) *gorm.DB {
	if o.db.dialect == DialectPostgres {
		return q.Clauses(clause.Locking{Strength: "NO KEY UPDATE", Options: "SKIP LOCKED"})
	}
	return q
}

// readyStates is the WHERE term of the partial index tasks_ready_idx, word for word:
// SQLite uses a partial index only for a query that repeats its terms with the same
// literals (a bound parameter does not count).
const readyStates = "state IN ('pending', 'assigned', 'in_progress')"

// notHeldForAdvisory leaves out tasks held by an open advisory prompt: the open
// inbox item is the hold (see models.InboxAdvisoryPrompt), so resolving it is what
// releases the task. inbox_items_task_kind_open_idx (migration 0017) answers it from
// the index, one probe per candidate.
const notHeldForAdvisory = "NOT EXISTS (SELECT 1 FROM inbox_items ai WHERE ai.task_id = tasks.id AND ai.kind = ? AND ai.resolved = ?)"

// ReadyTasks returns ready tasks an idle agent could take; see models.Claimer.
func (o *ops) ReadyTasks(ctx context.Context, rq models.ReadyQuery) ([]models.Task, error) {
	if len(rq.Roles) == 0 && len(rq.AgentIDs) == 0 {
		return []models.Task{}, nil
	}
	var recs []taskRecord
	if err := o.readyQuery(ctx, rq).Find(&recs).Error; err != nil {
		return nil, mapError(err, "tasks")
	}
	return fromTaskRecords(recs)
}

// readyQuery selects, locks and orders what ReadyTasks returns; rq names at least one
// role or agent.
func (o *ops) readyQuery(ctx context.Context, rq models.ReadyQuery) *gorm.DB {
	limit := rq.Limit
	if limit <= 0 {
		limit = defaultReadyLimit
	}
	now := normTime(rq.Now)
	// Each branch only when it has values: "IN ()" is not valid SQL and gorm's
	// "IN (NULL)" for an empty list would be a needless scan.
	var cond *gorm.DB
	or := func(expr string, args ...any) {
		if cond == nil {
			cond = o.g.Session(&gorm.Session{NewDB: true}).Where(expr, args...)
		} else {
			cond = cond.Or(expr, args...)
		}
	}
	if len(rq.Roles) > 0 {
		or("state = ? AND assignee_id IS NULL AND role IN ?", string(models.TaskPending), rq.Roles)
	}
	if len(rq.AgentIDs) > 0 {
		or("state = ? AND assignee_id IN ?", string(models.TaskAssigned), rq.AgentIDs)
		or("state = ? AND assignee_id IN ? AND builder_id = assignee_id AND (lease_until IS NULL OR lease_until < ?)",
			string(models.TaskInProgress), rq.AgentIDs, now)
	}
	// readyStates is implied by cond; spelled out, it lets SQLite use the index.
	q := o.q(ctx).Model(&taskRecord{})
	if o.db.dialect == DialectSQLite {
		// Left to itself SQLite's planner takes tasks_state_lease_idx for the state
		// terms and sorts every ready task to return the first few: a claim's cost
		// grew with the backlog. Walking tasks_ready_idx in order stops at the limit.
		q = q.Table("tasks INDEXED BY tasks_ready_idx")
	}
	q = q.Where(readyStates).Where(cond).
		Where("NOT EXISTS (SELECT 1 FROM task_deps d JOIN tasks dt ON dt.id = d.depends_on_id WHERE d.task_id = tasks.id AND dt.state <> ?)",
			string(models.TaskVerified)).
		Where(notHeldForAdvisory, models.InboxAdvisoryPrompt, false)
	if len(rq.Exclude) > 0 {
		q = q.Where("id NOT IN ?", rq.Exclude)
	}
	return o.skipLocked(q.Order("priority DESC, id").Limit(limit))
}

// RenewLeases extends the leases owner still holds among ids; see models.Claimer.
func (o *ops) RenewLeases(ctx context.Context, owner string, ids []int64, until time.Time) ([]int64, error) {
	if len(ids) == 0 || owner == "" {
		return []int64{}, nil
	}
	held := func(q *gorm.DB) *gorm.DB {
		return q.Where("id IN ? AND lease_owner = ? AND state = ?", ids, owner, string(models.TaskInProgress))
	}
	// A narrow UPDATE: a full-row save would overwrite a change someone else made
	// to the task since we read it. The tasks' slots need nothing: the lease is what
	// keeps them.
	if err := held(o.q(ctx).Model(&taskRecord{})).Update("lease_until", normTime(until)).Error; err != nil {
		return nil, mapError(err, "leases")
	}
	var kept []int64
	if err := held(o.q(ctx).Model(&taskRecord{})).Order("id").Pluck("id", &kept).Error; err != nil {
		return nil, mapError(err, "leases")
	}
	if kept == nil {
		kept = []int64{}
	}
	return kept, nil
}

// ReleaseLease clears the lease of task id if owner holds it; see models.Claimer. The
// trigger tasks_lease_ended frees its slot in the same statement.
func (o *ops) ReleaseLease(ctx context.Context, owner string, id int64) error {
	err := o.q(ctx).Model(&taskRecord{}).Where("id = ? AND lease_owner = ?", id, owner).
		Updates(map[string]any{"lease_owner": "", "lease_until": nil}).Error
	return mapError(err, "lease")
}
