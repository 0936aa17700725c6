package store

import (
	"context"
	"time"

	"github.com/countersign/countersign/models"
)

// tokenRecord is a row of tokens. TaskID and Attempt are set on attempt tokens.
type tokenRecord struct {
	ID         int64 `gorm:"primaryKey"`
	AgentID    int64
	Name       string
	Hash       string
	CreatedAt  time.Time `gorm:"autoCreateTime:false"`
	LastUsedAt *time.Time
	ExpiresAt  *time.Time
	RevokedAt  *time.Time
	TaskID     *int64
	Attempt    int
}

func (tokenRecord) TableName() string { return "tokens" }

func toTokenRecord(t *models.Token) *tokenRecord {
	return &tokenRecord{
		ID:         t.ID,
		AgentID:    t.AgentID,
		Name:       t.Name,
		Hash:       t.Hash,
		CreatedAt:  normTime(t.CreatedAt),
		LastUsedAt: normTimePtr(t.LastUsedAt),
		ExpiresAt:  normTimePtr(t.ExpiresAt),
		RevokedAt:  normTimePtr(t.RevokedAt),
		TaskID:     t.TaskID,
		Attempt:    t.Attempt,
	}
}

func fromTokenRecord(r *tokenRecord) *models.Token {
	return &models.Token{
		ID:         r.ID,
		AgentID:    r.AgentID,
		Name:       r.Name,
		Hash:       r.Hash,
		CreatedAt:  normTime(r.CreatedAt),
		LastUsedAt: normTimePtr(r.LastUsedAt),
		ExpiresAt:  normTimePtr(r.ExpiresAt),
		RevokedAt:  normTimePtr(r.RevokedAt),
		TaskID:     r.TaskID,
		Attempt:    r.Attempt,
	}
}

// CreateToken stores a token (its hash only) and sets t.ID.
func (o *ops) CreateToken(ctx context.Context, t *models.Token) error {
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now()
	}
	rec := toTokenRecord(t)
	rec.ID = 0
	if err := o.q(ctx).Create(rec).Error; err != nil {
		return conflictOr(err, "token", "a token with this hash already exists")
	}
	*t = *fromTokenRecord(rec)
	return nil
}

// TokenByHash returns the token with this hash and its agent, in one query, whatever
// their state; an unknown hash is ENOTFOUND.
func (o *ops) TokenByHash(ctx context.Context, hash string) (*models.Token, *models.Agent, error) {
	var row struct {
		Agent         agentRecord `gorm:"embedded"`
		TokID         int64       `gorm:"column:tok_id"`
		TokName       string      `gorm:"column:tok_name"`
		TokCreatedAt  time.Time   `gorm:"column:tok_created_at"`
		TokLastUsedAt *time.Time  `gorm:"column:tok_last_used_at"`
		TokExpiresAt  *time.Time  `gorm:"column:tok_expires_at"`
		TokRevokedAt  *time.Time  `gorm:"column:tok_revoked_at"`
		TokTaskID     *int64      `gorm:"column:tok_task_id"`
		TokAttempt    int         `gorm:"column:tok_attempt"`
	}
	err := o.q(ctx).Model(&agentRecord{}).
		Select("agents.*, tokens.id AS tok_id, tokens.name AS tok_name, tokens.created_at AS tok_created_at, "+
			"tokens.last_used_at AS tok_last_used_at, tokens.expires_at AS tok_expires_at, tokens.revoked_at AS tok_revoked_at, "+
			"tokens.task_id AS tok_task_id, tokens.attempt AS tok_attempt").
		Joins("JOIN tokens ON tokens.agent_id = agents.id").
		Where("tokens.hash = ?", hash).
		Take(&row).Error
	if err != nil {
		if isNotFound(err) {
			// The hash is a credential's: never echo it.
			return nil, nil, models.Errorf(models.ENOTFOUND, "no such token")
		}
		return nil, nil, mapError(err, "token")
	}
	a, err := fromAgentRecord(&row.Agent)
	if err != nil {
		return nil, nil, err
	}
	t := fromTokenRecord(&tokenRecord{ID: row.TokID, AgentID: a.ID, Name: row.TokName, Hash: hash, CreatedAt: row.TokCreatedAt,
		LastUsedAt: row.TokLastUsedAt, ExpiresAt: row.TokExpiresAt, RevokedAt: row.TokRevokedAt, TaskID: row.TokTaskID, Attempt: row.TokAttempt})
	return t, a, nil
}

// GetToken returns the token with this id.
func (o *ops) GetToken(ctx context.Context, id int64) (*models.Token, error) {
	var rec tokenRecord
	if err := o.q(ctx).Take(&rec, "id = ?", id).Error; err != nil {
		return nil, readError(err, "token", id)
	}
	return fromTokenRecord(&rec), nil
}

// ListTokens returns the agent's tokens but its attempt tokens, newest first.
func (o *ops) ListTokens(ctx context.Context, agentID int64) ([]models.Token, error) {
	var recs []tokenRecord
	err := o.q(ctx).Where("agent_id = ? AND task_id IS NULL", agentID).Order("id DESC").Limit(1000).Find(&recs).Error
	if err != nil {
		return nil, mapError(err, "tokens")
	}
	out := make([]models.Token, 0, len(recs))
	for i := range recs {
		out = append(out, *fromTokenRecord(&recs[i]))
	}
	return out, nil
}

// TouchToken sets last_used_at to at unless it is already after since: of several
// processes seeing the same stale time, one writes.
func (o *ops) TouchToken(ctx context.Context, id int64, at, since time.Time) error {
	err := o.q(ctx).Model(&tokenRecord{}).
		Where("id = ? AND (last_used_at IS NULL OR last_used_at < ?)", id, normTime(since)).
		Update("last_used_at", normTime(at)).Error
	return mapError(err, "token")
}

// RevokeAttemptToken revokes the attempt token id in one statement; ENOTFOUND when no
// attempt token has that id (one already revoked is no error).
func (o *ops) RevokeAttemptToken(ctx context.Context, id int64, at time.Time) error {
	res := o.q(ctx).Model(&tokenRecord{}).Where("id = ? AND task_id IS NOT NULL AND revoked_at IS NULL", id).
		Update("revoked_at", normTime(at))
	if res.Error != nil {
		return mapError(res.Error, "tokens")
	}
	if res.RowsAffected > 0 {
		return nil
	}
	var n int64
	if err := o.q(ctx).Model(&tokenRecord{}).Where("id = ? AND task_id IS NOT NULL", id).Count(&n).Error; err != nil {
		return mapError(err, "tokens")
	}
	if n == 0 {
		return models.NotFound("attempt token", id)
	}
	return nil
}

// RevokeAttemptTokens revokes the live attempt tokens among ids in one statement.
func (o *ops) RevokeAttemptTokens(ctx context.Context, ids []int64, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	err := o.q(ctx).Model(&tokenRecord{}).Where("id IN ? AND task_id IS NOT NULL AND revoked_at IS NULL", ids).
		Update("revoked_at", normTime(at)).Error
	return mapError(err, "tokens")
}

// RevokeTaskAttemptTokens revokes every live attempt token of task taskID in one
// statement.
func (o *ops) RevokeTaskAttemptTokens(ctx context.Context, taskID int64, at time.Time) error {
	err := o.q(ctx).Model(&tokenRecord{}).Where("task_id = ? AND revoked_at IS NULL", taskID).
		Update("revoked_at", normTime(at)).Error
	return mapError(err, "tokens")
}

// RevokeTokens sets revoked_at on the unrevoked tokens f selects and returns them as
// they are now. A filter that selects nothing is refused rather than revoking all.
func (o *ops) RevokeTokens(ctx context.Context, f models.TokenFilter, at time.Time) ([]models.Token, error) {
	if f.ID == 0 && f.AgentID == 0 && f.TaskID == 0 {
		return nil, models.Errorf(models.EINVALID, "revoking tokens needs a token, an agent or a task")
	}
	var out []models.Token
	err := o.atomic(ctx, func(o *ops) error {
		q := o.q(ctx).Where("revoked_at IS NULL")
		if f.ID != 0 {
			q = q.Where("id = ?", f.ID)
		}
		if f.AgentID != 0 {
			q = q.Where("agent_id = ?", f.AgentID)
		}
		if f.Name != "" {
			q = q.Where("name = ?", f.Name)
		}
		if f.TaskID != 0 {
			q = q.Where("task_id = ?", f.TaskID)
		}
		var recs []tokenRecord
		if err := q.Order("id").Find(&recs).Error; err != nil {
			return mapError(err, "tokens")
		}
		if len(recs) == 0 {
			return nil
		}
		ids := make([]int64, len(recs))
		at := normTime(at)
		for i := range recs {
			ids[i] = recs[i].ID
			recs[i].RevokedAt = &at
			out = append(out, *fromTokenRecord(&recs[i]))
		}
		return mapError(o.q(ctx).Model(&tokenRecord{}).Where("id IN ?", ids).Update("revoked_at", at).Error, "tokens")
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteAttemptTokens deletes the attempt tokens that expired before before.
func (o *ops) DeleteAttemptTokens(ctx context.Context, before time.Time) (int64, error) {
	res := o.q(ctx).Where("task_id IS NOT NULL AND expires_at < ?", normTime(before)).Delete(&tokenRecord{})
	return res.RowsAffected, mapError(res.Error, "tokens")
}
