package store

import (
	"context"
	"gorm.io/gorm"
	"time"

	"github.com/countersign/countersign/models"
)

// inboxRecord is a row of inbox_items; payload is JSON text.
type inboxRecord struct {
	ID          int64 `gorm:"primaryKey"`
	Kind        string
	TaskID      int64
	GoalID      *int64
	Title       string
	Payload     string
	Resolved    bool
	ResolvedBy  *int64
	Resolution  string
	CreatedAt   time.Time `gorm:"autoCreateTime:false"`
	ResolvedAt  *time.Time
	EscalatedAt *time.Time
}

func (inboxRecord) TableName() string { return "inbox_items" }

func toInboxRecord(i *models.InboxItem) *inboxRecord {
	return &inboxRecord{
		ID:          i.ID,
		Kind:        i.Kind,
		TaskID:      i.TaskID,
		GoalID:      i.GoalID,
		Title:       i.Title,
		Payload:     string(i.Payload),
		Resolved:    i.Resolved,
		ResolvedBy:  i.ResolvedBy,
		Resolution:  i.Resolution,
		CreatedAt:   normTime(i.CreatedAt),
		ResolvedAt:  normTimePtr(i.ResolvedAt),
		EscalatedAt: normTimePtr(i.EscalatedAt),
	}
}

func fromInboxRecord(r *inboxRecord) *models.InboxItem {
	return &models.InboxItem{
		ID:          r.ID,
		Kind:        r.Kind,
		TaskID:      r.TaskID,
		GoalID:      r.GoalID,
		Title:       r.Title,
		Payload:     rawOrNil(r.Payload),
		Resolved:    r.Resolved,
		ResolvedBy:  r.ResolvedBy,
		Resolution:  r.Resolution,
		CreatedAt:   normTime(r.CreatedAt),
		ResolvedAt:  normTimePtr(r.ResolvedAt),
		EscalatedAt: normTimePtr(r.EscalatedAt),
	}
}

// CreateInboxItem stores an inbox item and sets i.ID.
func (o *ops) CreateInboxItem(ctx context.Context, i *models.InboxItem) error {
	if i.CreatedAt.IsZero() {
		i.CreatedAt = now()
	}
	rec := toInboxRecord(i)
	rec.ID = 0
	if err := o.q(ctx).Create(rec).Error; err != nil {
		return mapError(err, "inbox item")
	}
	*i = *fromInboxRecord(rec)
	return nil
}

// UpdateInboxItem saves every field of i but CreatedAt.
func (o *ops) UpdateInboxItem(ctx context.Context, i *models.InboxItem) error {
	rec := toInboxRecord(i)
	res := o.q(ctx).Model(rec).Select("*").Omit("id", "created_at").Updates(rec)
	if res.Error != nil {
		return mapError(res.Error, "inbox item")
	}
	if res.RowsAffected == 0 {
		return models.NotFound("inbox item", i.ID)
	}
	*i = *fromInboxRecord(rec)
	return nil
}

// GetInboxItem returns the inbox item with this id.
func (o *ops) GetInboxItem(ctx context.Context, id int64) (*models.InboxItem, error) {
	var rec inboxRecord
	if err := o.q(ctx).Take(&rec, "id = ?", id).Error; err != nil {
		return nil, readError(err, "inbox item", id)
	}
	return fromInboxRecord(&rec), nil
}

// ListInbox returns inbox items newest first: open ones only unless
// f.IncludeResolved, at most f.Limit (default 100, at most 1000).
func (o *ops) ListInbox(ctx context.Context, f models.InboxFilter) ([]models.InboxItem, error) {
	q := inboxWhere(o.q(ctx), f).Order("id DESC").Limit(listLimit(f.Limit))
	var recs []inboxRecord
	if err := q.Find(&recs).Error; err != nil {
		return nil, mapError(err, "inbox items")
	}
	out := make([]models.InboxItem, 0, len(recs))
	for i := range recs {
		out = append(out, *fromInboxRecord(&recs[i]))
	}
	return out, nil
}

// CountInbox counts the items ListInbox would list without its limit.
func (o *ops) CountInbox(ctx context.Context, f models.InboxFilter) (int, error) {
	var n int64
	if err := inboxWhere(o.q(ctx).Model(&inboxRecord{}), f).Count(&n).Error; err != nil {
		return 0, mapError(err, "inbox items")
	}
	return int(n), nil
}

// inboxWhere applies an inbox filter's conditions.
func inboxWhere(q *gorm.DB, f models.InboxFilter) *gorm.DB {
	if !f.IncludeResolved {
		q = q.Where("resolved = ?", false)
	}
	if f.Kind != "" {
		q = q.Where("kind = ?", f.Kind)
	}
	if f.TaskID > 0 {
		q = q.Where("task_id = ?", f.TaskID)
	}
	return q
}

// EscalateInboxItem marks open item id escalated at at, unless it is resolved or
// escalated already (another process's sweep got there first); it reports whether it
// did.
func (o *ops) EscalateInboxItem(ctx context.Context, id int64, at time.Time) (bool, error) {
	res := o.q(ctx).Model(&inboxRecord{}).Where("id = ? AND NOT resolved AND escalated_at IS NULL", id).
		Update("escalated_at", normTime(at))
	if res.Error != nil {
		return false, mapError(res.Error, "inbox item")
	}
	return res.RowsAffected == 1, nil
}
