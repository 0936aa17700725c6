package models

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// LedgerComposer builds the ledger entries the service writes into the outbox. It lives
// behind an interface so that models does not depend on the ledger's message format;
// the ledger package provides the implementation.
type LedgerComposer interface {
	// TaskComplete builds t's task.complete; kind is KindRunner, KindAdvisory or
	// KindOverride (see verificationKind).
	TaskComplete(t *Task, builder, verifier *Agent, kind, outputHash string, judge *JudgeReport, at time.Time) (*LedgerEntry, error)
	TaskBlocked(t *Task, p BlockedPayload) (*LedgerEntry, error)
	GoalVerified(g *Goal, lead *Agent, counts map[TaskState]int, at time.Time) (*LedgerEntry, error)
	// TaskRevoked withdraws revoked, t's latest task.complete; why is RevokedReopened
	// or RevokedDrift and reason the person's words.
	TaskRevoked(t *Task, revoked *LedgerEntry, by *Agent, why, reason string, at time.Time) (*LedgerEntry, error)
	// GoalRevoked withdraws revoked, g's latest goal.verified.
	GoalRevoked(g *Goal, revoked *LedgerEntry, by *Agent, why, reason string, at time.Time) (*LedgerEntry, error)
}

// Service applies the governance rules. Every state change it makes runs in one
// transaction together with its event, its ledger entry and its inbox item, so that a
// change is never seen without its record. Rules are enforced here, where the state
// changes, whatever the caller (API, dashboard, MCP, runner).
type Service struct {
	store  Store
	ledger LedgerComposer
	now    Clock
}

// NewService returns a Service over store that writes ledger entries built by ledger.
func NewService(store Store, ledger LedgerComposer) *Service {
	return &Service{store: store, ledger: ledger, now: func() time.Time { return time.Now().UTC() }}
}

// SetClock replaces the service's clock (tests).
func (s *Service) SetClock(c Clock) { s.now = c }

// Now returns the service's current time (UTC), by the clock tests may replace.
func (s *Service) Now() time.Time { return s.now() }

// Store returns the store the service writes to, for read-only callers.
func (s *Service) Store() Store { return s.store }

// emit appends an event in tx.
func (s *Service) emit(ctx context.Context, tx Tx, typ string, actor *Agent, taskID, goalID *int64, data any) error {
	e, err := s.event(typ, actor, taskID, goalID, data)
	if err != nil {
		return err
	}
	return tx.AppendEvent(ctx, e)
}

// event builds an event of now.
func (s *Service) event(typ string, actor *Agent, taskID, goalID *int64, data any) (*Event, error) {
	e := &Event{Type: typ, TaskID: taskID, GoalID: goalID, CreatedAt: s.now()}
	if actor != nil && actor.ID != 0 {
		id := actor.ID
		e.ActorID = &id
	}
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			return nil, err
		}
		e.Data = b
	}
	return e, nil
}

func ptr[T any](v T) *T { return &v }

// requireAny returns EFORBIDDEN unless actor holds one of roles.
func requireAny(actor *Agent, rule string, roles ...string) error {
	if err := actor.Unscoped("do what needs one of the roles " + strings.Join(roles, ", ")); err != nil {
		return err
	}
	for _, r := range roles {
		if actor.HasRole(r) {
			return nil
		}
	}
	return Forbidden(rule, "this action needs one of the roles %v", roles)
}
