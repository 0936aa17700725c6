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
	// TaskComplete builds c.Task's task.complete (and, with a signing key, its
	// attestation).
	TaskComplete(c Completion) (*LedgerEntry, error)
	TaskBlocked(t *Task, p BlockedPayload) (*LedgerEntry, error)
	GoalVerified(g *Goal, lead *Agent, counts map[TaskState]int, at time.Time) (*LedgerEntry, error)
	// TaskRevoked withdraws revoked, t's latest task.complete; why is RevokedReopened
	// or RevokedDrift and reason the person's words.
	TaskRevoked(t *Task, revoked *LedgerEntry, by *Agent, why, reason string, at time.Time) (*LedgerEntry, error)
	// GoalRevoked withdraws revoked, g's latest goal.verified.
	GoalRevoked(g *Goal, revoked *LedgerEntry, by *Agent, why, reason string, at time.Time) (*LedgerEntry, error)
}

// Completion is everything a task.complete records about a verified task: the
// ledger message carries its summary, the attestation (runner/attest) all of it.
type Completion struct {
	Task *Task
	// Builder and Approver may be nil (no builder; no approval step); a nil Verifier is
	// the runner.
	Builder, Approver, Verifier *Agent
	// Kind is KindRunner, KindAdvisory or KindOverride (see verificationKind).
	Kind string
	// OutputHash is the SHA-384 hex of the verified output, "" when there is none.
	OutputHash string
	// Judge is the judge's report on the passed attempt, nil when no judge ran.
	Judge *JudgeReport
	// Attempt is the attempt that passed, nil when none did (an exec's acceptance).
	Attempt *Attempt
	At      time.Time
}

// Service wires the governance rules together: it builds one service per aggregate
// over one shared core and exposes them as fields, so that a caller takes only the
// aggregate (or the narrow interface of it) it needs. Every state change a service
// makes runs in one transaction together with its event, its ledger entry and its
// inbox item, so that a change is never seen without its record. Rules are enforced
// there, where the state changes, whatever the caller (API, dashboard, MCP, runner).
type Service struct {
	// Tasks creates tasks and moves them through their lifecycle.
	Tasks *TaskService
	// Goals creates, verifies and rejects goals and checks their deferred criteria.
	Goals *GoalService
	// Agents creates, changes and pauses agents.
	Agents *AgentService
	// Tokens issues, checks and revokes API and attempt tokens, and keeps the login lockout.
	Tokens *TokenService
	// Templates saves templates and the project's rules and starts runs.
	Templates *TemplateService
	// Inbox resolves inbox items and sweeps the overdue ones.
	Inbox *InboxService
	// Ledger writes and withdraws the ledger entries of tasks and goals and reads the standing ones.
	Ledger *LedgerService
	// Attempts is the runner's side of the rules: settling and blocking attempts.
	Attempts *AttemptService
	// Merges lands verified work.
	Merges *MergeService
	// Stats reads scorecards and spend.
	Stats *StatsService
	// Search finds tasks, goals and agents by id, title, brief or name.
	Search *SearchService
	// Queue reads every person's "Waiting on you" queue.
	Queue *QueueService

	c *core
}

// core is what every aggregate shares: the store, the ledger composer, the clock, and
// the event writer over them. All aggregates of a Service hold the same core, so a
// clock set once (SetClock) is every aggregate's clock.
type core struct {
	store    Store
	composer LedgerComposer
	now      Clock
}

// NewService returns a Service over store that writes ledger entries built by ledger.
func NewService(store Store, ledger LedgerComposer) *Service {
	c := &core{store: store, composer: ledger, now: func() time.Time { return time.Now().UTC() }}
	s := &Service{
		Tasks: &TaskService{core: c}, Goals: &GoalService{core: c}, Agents: &AgentService{core: c},
		Tokens: &TokenService{core: c}, Templates: &TemplateService{core: c}, Inbox: &InboxService{core: c},
		Ledger: &LedgerService{core: c}, Attempts: &AttemptService{core: c}, Merges: &MergeService{core: c},
		Stats: &StatsService{core: c}, Search: &SearchService{core: c}, Queue: &QueueService{core: c},
		c: c,
	}
	// The aggregates' links to each other: the moves one aggregate's changes make in another.
	s.Tasks.goals, s.Tasks.inbox, s.Tasks.ledger, s.Tasks.templates = s.Goals, s.Inbox, s.Ledger, s.Templates
	s.Goals.ledger, s.Goals.tasks, s.Goals.templates = s.Ledger, s.Tasks, s.Templates
	s.Inbox.agents, s.Inbox.attempts = s.Agents, s.Attempts
	s.Templates.tasks = s.Tasks
	s.Attempts.tasks = s.Tasks
	s.Merges.tasks = s.Tasks
	return s
}

// SetClock replaces the clock of every aggregate (tests).
func (s *Service) SetClock(c Clock) { s.c.now = c }

// Now returns the service's current time (UTC), by the clock tests may replace.
func (s *Service) Now() time.Time { return s.c.now() }

// Store returns the store the service writes to, for read-only callers.
func (s *Service) Store() Store { return s.c.store }

// emit appends an event in tx.
func (s *core) emit(ctx context.Context, tx Tx, typ string, actor *Agent, taskID, goalID *int64, data any) error {
	e, err := s.event(typ, actor, taskID, goalID, data)
	if err != nil {
		return err
	}
	return tx.AppendEvent(ctx, e)
}

// event builds an event of now.
func (s *core) event(typ string, actor *Agent, taskID, goalID *int64, data any) (*Event, error) {
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
