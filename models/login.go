package models

import (
	"context"
	"strings"
	"time"
)

// Account lockout: after MaxFailedLogins failed sign-ins within LoginLockout, an
// account name is locked for LoginLockout, from whatever address they came. The
// count is kept in the database, so it holds across restarts and across every server
// process; a successful sign-in resets it.
const (
	MaxFailedLogins = 10
	LoginLockout    = 15 * time.Minute
	// maxLoginName bounds the account name a failure is recorded under.
	maxLoginName = 64
)

// LoginFailures is the failed sign-ins recorded for an account name. Names that are no
// agent's are counted and locked like any other, so a lock tells nothing about
// whether an account exists.
type LoginFailures struct {
	Name          string
	Failures      int // since the last success or lock
	LastFailureAt time.Time
	LockedUntil   *time.Time
}

// loginKey is the name failures are recorded under.
func loginKey(name string) string {
	name = strings.ToLower(strings.TrimSpace(name))
	if len(name) > maxLoginName {
		name = name[:maxLoginName]
	}
	return name
}

// LoginLockedUntil returns the time until which the account name is locked, or the
// zero time when it is not locked at now.
func (s *TokenService) LoginLockedUntil(ctx context.Context, name string) (time.Time, error) {
	f, err := s.store.GetLoginFailures(ctx, loginKey(name))
	if ErrorCode(err) == ENOTFOUND {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	if f.LockedUntil != nil && s.now().Before(*f.LockedUntil) {
		return *f.LockedUntil, nil
	}
	return time.Time{}, nil
}

// LoginFailed counts a failed sign-in for the account name; the MaxFailedLogins-th
// within LoginLockout locks it for LoginLockout. It returns the time until which the
// account is now locked, or the zero time.
func (s *TokenService) LoginFailed(ctx context.Context, name string) (time.Time, error) {
	key := loginKey(name)
	now := s.now()
	n, err := s.store.AddLoginFailure(ctx, key, now, now.Add(-LoginLockout))
	if err != nil || n < MaxFailedLogins {
		return time.Time{}, err
	}
	until := now.Add(LoginLockout)
	if err := s.store.LockLogin(ctx, key, until); err != nil {
		return time.Time{}, err
	}
	return until, nil
}

// LoginSucceeded forgets the failed sign-ins of the account name.
func (s *TokenService) LoginSucceeded(ctx context.Context, name string) error {
	return s.store.ClearLoginFailures(ctx, loginKey(name))
}
