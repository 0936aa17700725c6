package store

import (
	"context"
	"time"

	"github.com/countersign/countersign/models"
)

// ledgerRecord is a row of ledger_entries; message, payload and tx_bytes are bytes.
type ledgerRecord struct {
	ID          int64 `gorm:"primaryKey"`
	Type        string
	TaskID      *int64
	GoalID      *int64
	Message     []byte
	Payload     []byte
	Attestation []byte
	Status      string
	Attempts    int
	LastError   string
	Override    bool
	Kind        string
	RevokesID   *int64
	CreatedAt   time.Time `gorm:"autoCreateTime:false"`
	TxID        string
	TxBytes     []byte
	Sequence    int64
	RunningHash string
	ConsensusAt *time.Time
	PostedAt    *time.Time
}

func (ledgerRecord) TableName() string { return "ledger_entries" }

func toLedgerRecord(e *models.LedgerEntry) *ledgerRecord {
	msg := e.Message
	if msg == nil {
		msg = []byte{} // the column is NOT NULL
	}
	return &ledgerRecord{
		ID:          e.ID,
		Type:        e.Type,
		TaskID:      e.TaskID,
		GoalID:      e.GoalID,
		Message:     msg,
		Payload:     bytesOrNil(e.Payload),
		Attestation: bytesOrNil(e.Attestation),
		Status:      e.Status,
		Attempts:    e.Attempts,
		LastError:   e.LastError,
		Override:    e.Override,
		Kind:        e.Kind,
		RevokesID:   e.RevokesID,
		CreatedAt:   normTime(e.CreatedAt),
		TxID:        e.TxID,
		TxBytes:     bytesOrNil(e.TxBytes),
		Sequence:    e.Sequence,
		RunningHash: e.RunningHash,
		ConsensusAt: normTimePtr(e.ConsensusAt),
		PostedAt:    normTimePtr(e.PostedAt),
	}
}

func fromLedgerRecord(r *ledgerRecord) *models.LedgerEntry {
	return &models.LedgerEntry{
		ID:          r.ID,
		Type:        r.Type,
		TaskID:      r.TaskID,
		GoalID:      r.GoalID,
		Message:     bytesOrNil(r.Message),
		Payload:     bytesOrNil(r.Payload),
		Attestation: bytesOrNil(r.Attestation),
		Status:      r.Status,
		Attempts:    r.Attempts,
		LastError:   r.LastError,
		Override:    r.Override,
		Kind:        r.Kind,
		RevokesID:   r.RevokesID,
		CreatedAt:   normTime(r.CreatedAt),
		TxID:        r.TxID,
		TxBytes:     bytesOrNil(r.TxBytes),
		Sequence:    r.Sequence,
		RunningHash: r.RunningHash,
		ConsensusAt: normTimePtr(r.ConsensusAt),
		PostedAt:    normTimePtr(r.PostedAt),
	}
}

// AppendLedgerEntry stores the entry as pending; its ID (the posting order, committed
// in order like event ids) is assigned when its transaction commits, and a zero
// CreatedAt is set to now. Outside InTx it runs in a transaction of its own.
func (o *ops) AppendLedgerEntry(ctx context.Context, e *models.LedgerEntry) error {
	if o.tx == nil {
		return o.atomic(ctx, func(o *ops) error { return o.AppendLedgerEntry(ctx, e) })
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = now()
	}
	e.Status = models.LedgerPending
	o.tx.ledger = append(o.tx.ledger, e)
	return nil
}

// insertLedgerEntries writes the held entries in one statement and sets their IDs.
func (o *ops) insertLedgerEntries(ctx context.Context, es []*models.LedgerEntry) error {
	recs := make([]*ledgerRecord, len(es))
	for i, e := range es {
		recs[i] = toLedgerRecord(e)
		recs[i].ID = 0
	}
	if err := o.q(ctx).Create(&recs).Error; err != nil {
		return mapError(err, "ledger entry")
	}
	for i, e := range es {
		*e = *fromLedgerRecord(recs[i])
	}
	return nil
}

// UpdateLedgerEntry saves every field of e but CreatedAt (the publisher records the
// prepared transaction, attempts and the receipt).
func (o *ops) UpdateLedgerEntry(ctx context.Context, e *models.LedgerEntry) error {
	rec := toLedgerRecord(e)
	res := o.q(ctx).Model(rec).Select("*").Omit("id", "created_at").Updates(rec)
	if res.Error != nil {
		return mapError(res.Error, "ledger entry")
	}
	if res.RowsAffected == 0 {
		return models.NotFound("ledger entry", e.ID)
	}
	*e = *fromLedgerRecord(rec)
	return nil
}

// GetLedgerEntry returns the ledger entry with this id.
func (o *ops) GetLedgerEntry(ctx context.Context, id int64) (*models.LedgerEntry, error) {
	var rec ledgerRecord
	if err := o.q(ctx).Take(&rec, "id = ?", id).Error; err != nil {
		return nil, readError(err, "ledger entry", id)
	}
	return fromLedgerRecord(&rec), nil
}

// ListLedger returns ledger entries oldest first: of one status when f.Status is
// set, about one task or goal when f.TaskID or f.GoalID is, of f.Types when given,
// with ids above f.AfterID,
// at most f.Limit (default 100, at most 1000).
func (o *ops) ListLedger(ctx context.Context, f models.LedgerFilter) ([]models.LedgerEntry, error) {
	q := o.q(ctx).Where("id > ?", f.AfterID).Order("id").Limit(listLimit(f.Limit))
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if f.TaskID != 0 {
		q = q.Where("task_id = ?", f.TaskID)
	}
	if f.GoalID != 0 {
		q = q.Where("goal_id = ?", f.GoalID)
	}
	if len(f.Types) > 0 {
		q = q.Where("type IN ?", f.Types)
	}
	var recs []ledgerRecord
	if err := q.Find(&recs).Error; err != nil {
		return nil, mapError(err, "ledger entries")
	}
	out := make([]models.LedgerEntry, 0, len(recs))
	for i := range recs {
		out = append(out, *fromLedgerRecord(&recs[i]))
	}
	return out, nil
}

// CountLedger counts the entries with a status ("" for all).
func (o *ops) CountLedger(ctx context.Context, status string) (int, error) {
	q := o.q(ctx).Model(&ledgerRecord{})
	if status != "" {
		q = q.Where("status = ?", status)
	}
	var n int64
	if err := q.Count(&n).Error; err != nil {
		return 0, mapError(err, "ledger entries")
	}
	return int(n), nil
}
