package store

import (
	"context"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/countersign/countersign/models"
)

// rulesRecord is the single row (id 1) of project_rules.
type rulesRecord struct {
	ID        int `gorm:"primaryKey;autoIncrement:false"`
	Rules     string
	UpdatedAt time.Time `gorm:"autoUpdateTime:false"`
}

func (rulesRecord) TableName() string { return "project_rules" }

// rulesRowID is the id of the only project_rules row.
const rulesRowID = 1

// GetRules returns the project rules; ENOTFOUND when none were saved yet.
func (o *ops) GetRules(ctx context.Context) (*models.ProjectRules, error) {
	return o.getRules(o.q(ctx))
}

// LockRules is GetRules locking the row until the transaction ends (see forUpdate).
// With no rules saved yet there is no row to lock.
func (o *ops) LockRules(ctx context.Context) (*models.ProjectRules, error) {
	return o.getRules(o.forUpdate(o.q(ctx)))
}

func (o *ops) getRules(q *gorm.DB) (*models.ProjectRules, error) {
	var rec rulesRecord
	if err := q.Take(&rec, "id = ?", rulesRowID).Error; err != nil {
		if isNotFound(err) {
			return nil, models.Errorf(models.ENOTFOUND, "no project rules saved yet")
		}
		return nil, mapError(err, "project rules")
	}
	var r models.ProjectRules
	if err := fromJSON(rec.Rules, &r, "project_rules.rules"); err != nil {
		return nil, err
	}
	r.UpdatedAt = normTime(rec.UpdatedAt)
	return &r, nil
}

// SaveRules replaces the project rules and sets r.UpdatedAt.
func (o *ops) SaveRules(ctx context.Context, r *models.ProjectRules) error {
	r.UpdatedAt = now()
	body, err := toJSON(r, "{}")
	if err != nil {
		return err
	}
	rec := &rulesRecord{ID: rulesRowID, Rules: body, UpdatedAt: r.UpdatedAt}
	err = o.q(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "id"}},
		DoUpdates: clause.AssignmentColumns([]string{"rules", "updated_at"}),
	}).Create(rec).Error
	return mapError(err, "project rules")
}
