package models

import (
	"context"
	"time"
)

// Store persists the domain. Every method takes a context. Reads and writes on Store
// run on their own; InTx runs fn in one transaction, and every write the service makes
// for one state change (the row, its event, its ledger entry, its inbox item) goes
// through the Tx it is given, so that they commit or roll back together.
type Store interface {
	Tx
	// InTx runs fn in a transaction; an error from fn (or a panic) rolls it back.
	InTx(ctx context.Context, fn func(tx Tx) error) error
	// Subscribe returns a channel that receives the newest event id whenever events
	// are committed (by this process, or on PostgreSQL by any process). A slow reader
	// misses intermediate values, never the latest. The channel closes with ctx.
	Subscribe(ctx context.Context) <-chan int64
	// Ping checks that the database is reachable and the migrations are applied.
	Ping(ctx context.Context) error
	// Dialect is "postgres" or "sqlite".
	Dialect() string
	Close() error
}

// Tx is the set of operations available inside and outside a transaction. Lock*
// methods read a row for update (SELECT … FOR UPDATE on PostgreSQL; SQLite serialises
// writers). Get* and Lock* return an ENOTFOUND *Error when the row does not exist.
type Tx interface {
	AgentStore
	TokenStore
	LoginStore
	GoalStore
	TaskStore
	TemplateStore
	AttemptStore
	InboxStore
	EventStore
	LedgerStore
	RulesStore
}

// AgentStore keeps agents.
type AgentStore interface {
	CreateAgent(ctx context.Context, a *Agent) error
	UpdateAgent(ctx context.Context, a *Agent) error
	GetAgent(ctx context.Context, id int64) (*Agent, error)
	GetAgentByName(ctx context.Context, name string) (*Agent, error)
	ListAgents(ctx context.Context) ([]Agent, error)
}

// TokenStore keeps API tokens and the runner's attempt tokens.
type TokenStore interface {
	CreateToken(ctx context.Context, t *Token) error
	// TokenByHash returns the token with this hash and its agent, whatever their state
	// (revoked, expired, disabled: the service decides); ENOTFOUND when there is none.
	TokenByHash(ctx context.Context, hash string) (*Token, *Agent, error)
	GetToken(ctx context.Context, id int64) (*Token, error)
	// ListTokens returns an agent's tokens, newest first: its own, without the attempt
	// tokens the runner issues.
	ListTokens(ctx context.Context, agentID int64) ([]Token, error)
	// TouchToken records the token's use at at, unless it was recorded after since.
	TouchToken(ctx context.Context, id int64, at, since time.Time) error
	// RevokeAttemptToken marks the attempt token id revoked at at, in one statement; an
	// id that names no attempt token, or one already revoked, changes nothing.
	RevokeAttemptToken(ctx context.Context, id int64, at time.Time) error
	// RevokeAttemptTokens is RevokeAttemptToken for several ids in one statement.
	RevokeAttemptTokens(ctx context.Context, ids []int64, at time.Time) error
	// RevokeTaskAttemptTokens marks revoked at at every live attempt token of task
	// taskID, in one statement.
	RevokeTaskAttemptTokens(ctx context.Context, taskID int64, at time.Time) error
	// RevokeTokens marks revoked at at the unrevoked tokens f selects and returns them.
	RevokeTokens(ctx context.Context, f TokenFilter, at time.Time) ([]Token, error)
	// DeleteAttemptTokens deletes the attempt tokens that expired before before, and
	// returns how many.
	DeleteAttemptTokens(ctx context.Context, before time.Time) (int64, error)
}

// LoginStore keeps failed sign-ins, lockouts and browser sessions.
type LoginStore interface {
	// GetLoginFailures returns the failed sign-ins recorded for an account name;
	// ENOTFOUND when there are none.
	GetLoginFailures(ctx context.Context, name string) (*LoginFailures, error)
	// AddLoginFailure counts one failed sign-in at at and returns the count: the
	// count starts again at 1 when the last failure was before since.
	AddLoginFailure(ctx context.Context, name string, at, since time.Time) (int, error)
	// LockLogin locks the account name until until and zeroes its count.
	LockLogin(ctx context.Context, name string, until time.Time) error
	// ClearLoginFailures forgets an account name's failures and lock.
	ClearLoginFailures(ctx context.Context, name string) error

	CreateSession(ctx context.Context, s *Session) error
	GetSession(ctx context.Context, id string) (*Session, error)
	DeleteSession(ctx context.Context, id string) error
}

// GoalStore keeps goals.
type GoalStore interface {
	CreateGoal(ctx context.Context, g *Goal) error
	UpdateGoal(ctx context.Context, g *Goal) error
	GetGoal(ctx context.Context, id int64) (*Goal, error)
	LockGoal(ctx context.Context, id int64) (*Goal, error)
	ListGoals(ctx context.Context, f GoalFilter) ([]Goal, error)
	// CountGoals counts all goals per state; every state of GoalStates is present.
	CountGoals(ctx context.Context) (map[GoalState]int, error)
	// SearchGoals returns up to limit goals whose title or description contains
	// text (MinSearchText or more characters, any case), newest first.
	SearchGoals(ctx context.Context, text string, limit int) ([]Goal, error)
}

// TaskStore keeps tasks and their dependencies.
type TaskStore interface {
	CreateTask(ctx context.Context, t *Task) error
	// UpdateTask saves every field of t but CreatedAt and DependsOn: dependencies are
	// fixed when the task is created.
	UpdateTask(ctx context.Context, t *Task) error
	// AddDependency makes task taskID wait for task dependsOn as well as for those it
	// was created with, for a fix the runner found the task needs (a conflict between
	// the steps it builds on, a failed review round).
	AddDependency(ctx context.Context, taskID, dependsOn int64) error
	// RemoveDependency stops task taskID waiting for task dependsOn (a no-op when it
	// does not): the other change to a task's dependencies, for a review's fix task
	// that was cancelled, which would otherwise hold the reviewed task forever.
	RemoveDependency(ctx context.Context, taskID, dependsOn int64) error
	GetTask(ctx context.Context, id int64) (*Task, error)
	LockTask(ctx context.Context, id int64) (*Task, error)
	GetTasks(ctx context.Context, ids []int64) ([]Task, error)
	ListTasks(ctx context.Context, f TaskFilter) ([]Task, error)
	// ListTaskHeads is ListTasks (by state, goal and assignee, newest first) reading
	// only what says who acts on a task and where it sits: its id, goal, title, role,
	// state, policies, creator, assignee, builder, approver, update time, run, step,
	// reviewed task and override; every other field is zero. For lists that decide who
	// may act (the queue) or draw a goal's runs, never for a change.
	ListTaskHeads(ctx context.Context, f TaskFilter) ([]Task, error)
	// Dependents lists the tasks that depend on task id.
	Dependents(ctx context.Context, id int64) ([]Task, error)
	// CountTasks counts tasks per state, of one goal when goalID > 0, else of all.
	CountTasks(ctx context.Context, goalID int64) (map[TaskState]int, error)
	// CountTasksByGoal is CountTasks for each of goalIDs, in one query: every id is a
	// key, and each of its maps has every state.
	CountTasksByGoal(ctx context.Context, goalIDs []int64) (map[int64]map[TaskState]int, error)
	// SearchTasks returns up to limit tasks whose title or brief contains text
	// (MinSearchText or more characters, any case), newest first.
	SearchTasks(ctx context.Context, text string, limit int) ([]Task, error)
}

// TemplateStore keeps workflow templates, their versions and their runs.
type TemplateStore interface {
	// CreateTemplate saves t as the next version of its name and sets t.Version.
	CreateTemplate(ctx context.Context, t *Template) error
	// GetTemplate returns one version of a template; version 0 means the latest.
	GetTemplate(ctx context.Context, name string, version int) (*Template, error)
	// ListTemplates returns the latest version of every template, by name.
	ListTemplates(ctx context.Context) ([]Template, error)
	ListTemplateVersions(ctx context.Context, name string) ([]Template, error)

	CreateRun(ctx context.Context, r *Run) error
	GetRun(ctx context.Context, id int64) (*Run, error)
}

// AttemptStore keeps the runner's attempts and sums their spend.
type AttemptStore interface {
	CreateAttempt(ctx context.Context, a *Attempt) error
	UpdateAttempt(ctx context.Context, a *Attempt) error
	ListAttempts(ctx context.Context, taskID int64) ([]Attempt, error)
	// SpendOf sums what the attempts in scope used: cost and tokens of finished ones,
	// and what running ones reserved.
	SpendOf(ctx context.Context, scope SpendScope) (Spend, error)
}

// InboxStore keeps the inbox.
type InboxStore interface {
	CreateInboxItem(ctx context.Context, i *InboxItem) error
	UpdateInboxItem(ctx context.Context, i *InboxItem) error
	GetInboxItem(ctx context.Context, id int64) (*InboxItem, error)
	ListInbox(ctx context.Context, f InboxFilter) ([]InboxItem, error)
	// EscalateInboxItem marks open item id escalated at at, unless it is resolved or
	// escalated already; it reports whether it did.
	EscalateInboxItem(ctx context.Context, id int64, at time.Time) (bool, error)
	// CountInbox counts the items ListInbox would list without its limit.
	CountInbox(ctx context.Context, f InboxFilter) (int, error)
}

// EventStore appends and reads the event log.
type EventStore interface {
	// AppendEvent stores e. Its ID (strictly increasing; readers see ids in order and
	// none before a smaller one that may still commit) is assigned when its
	// transaction commits, just before: reads through the same
	// transaction do not see it, and code that needs the ID registers BeforeCommit.
	AppendEvent(ctx context.Context, e *Event) error
	// AppendEvents stores es in order, as AppendEvent one by one.
	AppendEvents(ctx context.Context, es []*Event) error
	// BeforeCommit runs fn once the transaction's events and ledger entries are
	// stored and have their IDs, before it commits (at once outside a transaction);
	// fn must not use the transaction.
	BeforeCommit(fn func())
	// ListEvents returns up to limit events with ID > afterID, oldest first.
	ListEvents(ctx context.Context, afterID int64, limit int) ([]Event, error)
	// LastEventID returns the id of the newest event, 0 when there is none.
	LastEventID(ctx context.Context) (int64, error)
	// ListTaskEvents returns the newest limit events of one task, oldest first.
	ListTaskEvents(ctx context.Context, taskID int64, limit int) ([]Event, error)
	// ListEventsOfType returns up to limit events of type typ with an ID below
	// beforeID (any ID when 0), newest first.
	ListEventsOfType(ctx context.Context, typ string, beforeID int64, limit int) ([]Event, error)
	// ListAgentEvents returns the newest limit events about one agent (Event.AgentID),
	// oldest first.
	ListAgentEvents(ctx context.Context, agentID int64, limit int) ([]Event, error)
}

// LedgerStore keeps ledger entries until and after they are posted.
type LedgerStore interface {
	// AppendLedgerEntry stores e as pending; its ID (the posting order) is assigned
	// as an event's is, when its transaction commits.
	AppendLedgerEntry(ctx context.Context, e *LedgerEntry) error
	UpdateLedgerEntry(ctx context.Context, e *LedgerEntry) error
	GetLedgerEntry(ctx context.Context, id int64) (*LedgerEntry, error)
	ListLedger(ctx context.Context, f LedgerFilter) ([]LedgerEntry, error)
	// CountLedger counts the entries with a status ("" for all).
	CountLedger(ctx context.Context, status string) (int, error)
}

// RulesStore keeps the project rules.
type RulesStore interface {
	// GetRules returns the project rules; ENOTFOUND when none were saved yet.
	GetRules(ctx context.Context) (*ProjectRules, error)
	// LockRules is GetRules locking the saved rules until the transaction ends, so
	// that a change sees the rules it replaces.
	LockRules(ctx context.Context) (*ProjectRules, error)
	SaveRules(ctx context.Context, r *ProjectRules) error
}

// GoalFilter selects goals for listing.
type GoalFilter struct {
	State   GoalState
	Project string
	Limit   int
	AfterID int64  // keyset cursor: the goals listed after this one in Sort's order
	Sort    string // as TaskFilter.Sort
}

// InboxFilter selects inbox items. By default only open items are listed.
type InboxFilter struct {
	Kind            string
	TaskID          int64
	IncludeResolved bool
	Limit           int
}

// TokenFilter selects tokens; zero fields do not filter, but at least one must be set.
type TokenFilter struct {
	ID      int64
	AgentID int64
	Name    string
	TaskID  int64 // attempt tokens of this task
}

// LedgerFilter selects ledger entries, oldest first.
type LedgerFilter struct {
	Status  string
	AfterID int64
	Limit   int
	// TaskID and GoalID, when set, keep the entries about that task or goal.
	TaskID int64
	GoalID int64
	// Types, when set, keeps the entries of these types.
	Types []string
}

// Clock returns the current time; tests replace it.
type Clock func() time.Time
