package models

import (
	"context"
	"time"
)

// Claimer is the part of a store the runner pool claims work with. It is a separate
// interface from Store so that only the runner depends on it; the gorm store's DB and
// the Tx it hands to InTx implement it. Call LockWorkers and ReadyTasks on the Tx of
// one InTx: the rows they lock stay locked until the claim commits, and other runners
// skip them instead of waiting (PostgreSQL SKIP LOCKED), so several runner processes
// share one database without handing out a task or an agent slot twice.
type Claimer interface {
	// LockWorkers returns the enabled worker agents, each with the number of tasks
	// it holds a live lease on (lease_until after now): its running tasks. On
	// PostgreSQL the agent rows are locked for the transaction and agents another
	// claim has locked are left out, so two runners never count the same free slot.
	LockWorkers(ctx context.Context, now time.Time) ([]WorkerLoad, error)
	// ReadyTasks returns up to q.Limit ready tasks, highest priority first, then
	// oldest. Ready means every dependency is verified and either: pending without
	// an assignee and with a role in q.Roles; assigned to one of q.AgentIDs; or in
	// progress, built by and assigned to one of q.AgentIDs, without a live lease (a
	// rejection sent it back, or its runner died). Tasks in q.Exclude are left out.
	// On PostgreSQL the rows are locked and rows locked by another claim skipped.
	ReadyTasks(ctx context.Context, q ReadyQuery) ([]Task, error)
	// RenewLeases moves lease_until to until on those of ids that owner still holds
	// (lease_owner = owner, state in_progress) and returns their ids; the others
	// were lost (cancelled, blocked or taken over by someone else).
	RenewLeases(ctx context.Context, owner string, ids []int64, until time.Time) ([]int64, error)
	// ReleaseLease clears the lease of task id if owner holds it, without touching
	// anything else, so another runner may take the task at once.
	ReleaseLease(ctx context.Context, owner string, id int64) error
}

// WorkerLoad is a worker agent and the number of tasks it is running now.
type WorkerLoad struct {
	Agent   Agent
	Running int
}

// ReadyQuery selects the ready tasks a claim considers: only those some idle agent
// could take, so that busy agents' work does not crowd out the rest.
type ReadyQuery struct {
	Now      time.Time // leases ending before Now are expired
	Roles    []string  // roles of idle agents, for unassigned pending tasks
	AgentIDs []int64   // idle agents, for assigned tasks and takeovers
	Exclude  []int64   // tasks the caller is running itself
	Limit    int       // at most this many (default 16)
}
