package store

import (
	"context"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/countersign/countersign/models"
)

// goalRecord is a row of goals.
type goalRecord struct {
	ID          int64 `gorm:"primaryKey"`
	Title       string
	Description string
	Project     string
	State       string
	CreatorID   *int64 // NULL: created by the operator from the command line
	VerifierID  *int64
	Notes       string
	Budget      string
	Deferred    string // JSON; "" when none
	VerifiedAt  *time.Time
	CreatedAt   time.Time `gorm:"autoCreateTime:false"`
	UpdatedAt   time.Time `gorm:"autoUpdateTime:false"`
}

func (goalRecord) TableName() string { return "goals" }

func toGoalRecord(g *models.Goal) *goalRecord {
	return &goalRecord{
		ID:          g.ID,
		Title:       g.Title,
		Description: g.Description,
		Project:     g.Project,
		State:       string(g.State),
		CreatorID:   creatorRef(g.CreatorID),
		VerifierID:  g.VerifierID,
		Notes:       g.Notes,
		Budget:      budgetJSON(g.Budget),
		Deferred:    deferredJSON(g.Deferred),
		VerifiedAt:  normTimePtr(g.VerifiedAt),
		CreatedAt:   normTime(g.CreatedAt),
		UpdatedAt:   normTime(g.UpdatedAt),
	}
}

func fromGoalRecord(r *goalRecord) *models.Goal {
	return &models.Goal{
		ID:          r.ID,
		Title:       r.Title,
		Description: r.Description,
		Project:     r.Project,
		State:       models.GoalState(r.State),
		CreatorID:   creatorID(r.CreatorID),
		VerifierID:  r.VerifierID,
		Notes:       r.Notes,
		Budget:      budgetOf(r.Budget),
		Deferred:    deferredOf(r.Deferred),
		VerifiedAt:  normTimePtr(r.VerifiedAt),
		CreatedAt:   normTime(r.CreatedAt),
		UpdatedAt:   normTime(r.UpdatedAt),
	}
}

// CreateGoal stores a new goal and sets g.ID; an empty state is stored as open.
func (o *ops) CreateGoal(ctx context.Context, g *models.Goal) error {
	if g.State == "" {
		g.State = models.GoalOpen
	}
	if g.CreatedAt.IsZero() {
		g.CreatedAt = now()
	}
	if g.UpdatedAt.IsZero() {
		g.UpdatedAt = g.CreatedAt
	}
	rec := toGoalRecord(g)
	rec.ID = 0
	if err := o.q(ctx).Create(rec).Error; err != nil {
		return mapError(err, "goal")
	}
	*g = *fromGoalRecord(rec)
	return nil
}

// UpdateGoal saves every field of g but CreatedAt and sets UpdatedAt.
func (o *ops) UpdateGoal(ctx context.Context, g *models.Goal) error {
	g.UpdatedAt = now()
	rec := toGoalRecord(g)
	res := o.q(ctx).Model(rec).Select("*").Omit("id", "created_at").Updates(rec)
	if res.Error != nil {
		return mapError(res.Error, "goal")
	}
	if res.RowsAffected == 0 {
		return models.NotFound("goal", g.ID)
	}
	*g = *fromGoalRecord(rec)
	return nil
}

// GetGoal returns the goal with this id.
func (o *ops) GetGoal(ctx context.Context, id int64) (*models.Goal, error) {
	return o.getGoal(o.q(ctx), id)
}

// LockGoal returns the goal with this id, locked for update until the transaction ends.
func (o *ops) LockGoal(ctx context.Context, id int64) (*models.Goal, error) {
	return o.getGoal(o.forUpdate(o.q(ctx)), id)
}

func (o *ops) getGoal(q *gorm.DB, id int64) (*models.Goal, error) {
	var rec goalRecord
	if err := q.Take(&rec, "id = ?", id).Error; err != nil {
		return nil, readError(err, "goal", id)
	}
	return fromGoalRecord(&rec), nil
}

// ListGoals returns goals newest first (by f.Sort), after goal f.AfterID in that
// order when it is set.
func (o *ops) ListGoals(ctx context.Context, f models.GoalFilter) ([]models.Goal, error) {
	q := keyset(o.q(ctx), "goals", f.Sort, f.AfterID).Limit(listLimit(f.Limit))
	if f.State != "" {
		q = q.Where("state = ?", string(f.State))
	}
	if f.Project != "" {
		q = q.Where("project = ?", f.Project)
	}
	var recs []goalRecord
	if err := q.Find(&recs).Error; err != nil {
		return nil, mapError(err, "goals")
	}
	out := make([]models.Goal, 0, len(recs))
	for i := range recs {
		out = append(out, *fromGoalRecord(&recs[i]))
	}
	return out, nil
}

// CountGoals counts all goals per state with one query. Every state of
// models.GoalStates is present, with 0 when no goal is in it.
func (o *ops) CountGoals(ctx context.Context) (map[models.GoalState]int, error) {
	return countByState(o.q(ctx).Model(&goalRecord{}), models.GoalStates, "goals")
}

// forUpdate locks the rows read until the transaction ends. On PostgreSQL that is
// FOR NO KEY UPDATE: it excludes other Lock* calls and updates exactly like FOR UPDATE,
// but lets inserts that merely reference the row (an inbox item, an attempt) proceed,
// which avoids deadlocks between a locked task and its foreign keys. SQLite has no row
// locks and needs none: a transaction holds the only connection and, begun IMMEDIATE,
// the database's write lock.
func (o *ops) forUpdate(q *gorm.DB) *gorm.DB {
	if o.db.dialect == DialectPostgres {
		return q.Clauses(clause.Locking{Strength: "NO KEY UPDATE"})
	}
	return q
}

// deferredJSON encodes a goal's deferred checks for its column ("" for none).
func deferredJSON(d *models.DeferredChecks) string {
	s, _ := toJSON(d, "") // plain structs of strings, numbers and times: never fails
	return s
}

// deferredOf decodes the column; a column that does not decode reads as failed
// checks, so that a goal is never verified past checks nobody can read.
func deferredOf(s string) *models.DeferredChecks {
	var d *models.DeferredChecks
	if err := fromJSON(s, &d, "goals.deferred"); err != nil {
		return &models.DeferredChecks{Status: models.DeferredFailed, Diagnosis: err.Error()}
	}
	return d
}
