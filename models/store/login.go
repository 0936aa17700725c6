package store

import (
	"context"
	"time"

	"github.com/countersign/countersign/models"
)

// loginFailureRecord is a row of login_failures: the failed sign-ins of one account
// name since its last success or lock.
type loginFailureRecord struct {
	Name          string `gorm:"primaryKey"`
	Failures      int
	LastFailureAt time.Time
	LockedUntil   *time.Time
}

func (loginFailureRecord) TableName() string { return "login_failures" }

// GetLoginFailures returns the failures recorded for name; ENOTFOUND when none.
func (o *ops) GetLoginFailures(ctx context.Context, name string) (*models.LoginFailures, error) {
	var rec loginFailureRecord
	if err := o.q(ctx).Take(&rec, "name = ?", name).Error; err != nil {
		return nil, readError(err, "login failures of", "this name")
	}
	return &models.LoginFailures{Name: rec.Name, Failures: rec.Failures, LastFailureAt: normTime(rec.LastFailureAt),
		LockedUntil: normTimePtr(rec.LockedUntil)}, nil
}

// AddLoginFailure counts one failure of name at at, in one statement (so that
// concurrent failures from several processes all count): the count starts again at 1
// when the previous failure was before since. It first forgets the other names whose
// last failure and lock are both over, so the table stays small.
func (o *ops) AddLoginFailure(ctx context.Context, name string, at, since time.Time) (int, error) {
	at, since = normTime(at), normTime(since)
	err := o.q(ctx).Where("name <> ? AND last_failure_at < ? AND (locked_until IS NULL OR locked_until < ?)", name, since, at).
		Delete(&loginFailureRecord{}).Error
	if err != nil {
		return 0, mapError(err, "login failures")
	}
	var n int
	err = o.q(ctx).Raw(`INSERT INTO login_failures (name, failures, last_failure_at) VALUES (?, 1, ?)
ON CONFLICT (name) DO UPDATE SET
	failures = CASE WHEN login_failures.last_failure_at < ? THEN 1 ELSE login_failures.failures + 1 END,
	last_failure_at = excluded.last_failure_at
RETURNING failures`, name, at, since).Scan(&n).Error
	return n, mapError(err, "login failures")
}

// LockLogin locks name until until and zeroes its count.
func (o *ops) LockLogin(ctx context.Context, name string, until time.Time) error {
	until = normTime(until)
	err := o.q(ctx).Model(&loginFailureRecord{}).Where("name = ?", name).
		Updates(map[string]any{"failures": 0, "locked_until": until}).Error
	return mapError(err, "login failures")
}

// ClearLoginFailures forgets the failures and lock of name.
func (o *ops) ClearLoginFailures(ctx context.Context, name string) error {
	return mapError(o.q(ctx).Delete(&loginFailureRecord{}, "name = ?", name).Error, "login failures")
}
