package models

import (
	"context"
	"time"
)

// Claimer is the part of a store the runner pool claims work with. It is a separate
// interface from Store so that only the runner depends on it; the gorm store's DB and
// the Tx it hands to InTx implement it. A claim calls WorkerLoads, ReadyTasks and
// TakeSlot on the Tx of one InTx, in that order: the task rows and slot rows they lock
// stay locked until the claim commits, and other runners skip them instead of waiting
// (PostgreSQL SKIP LOCKED), so several runner processes claim side by side on one
// database without handing out a task or an agent slot twice. No agent row is locked.
type Claimer interface {
	// WorkerLoads returns the enabled worker agents, each with the number of its
	// slots that are busy (Running: slots below its concurrency whose task holds the
	// slot's runner's lease past now). Nothing is locked: it tells the claim which
	// agents may have room and which is least busy; TakeSlot is what enforces the
	// concurrency.
	WorkerLoads(ctx context.Context, now time.Time) ([]WorkerLoad, error)
	// TakeSlot gives the task a free slot of the agent below its concurrency, for
	// the runner Owner, and reports whether there was one. A slot is free when it
	// holds no task, or when its task no longer holds the lease of the slot's runner
	// (ended, passed before Now, taken over): the lease the claim then writes on the
	// task is what keeps the slot busy. On PostgreSQL the slot is locked and slots
	// other claims hold are skipped, never waited for: false means the agent is full
	// for this claim.
	TakeSlot(ctx context.Context, s SlotClaim) (bool, error)
	// FreeSlots frees the slots that hold the task: before a takeover takes a new one
	// (the dead lease's slot may still name it), or when a claim gives the task up.
	// Ending a task's lease frees its slot by itself.
	FreeSlots(ctx context.Context, taskID int64) error
	// ReadyTasks returns up to q.Limit ready tasks, highest priority first, then
	// oldest. Ready means every dependency is verified and either: pending without
	// an assignee and with a role in q.Roles; assigned to one of q.AgentIDs; or in
	// progress, built by and assigned to one of q.AgentIDs, without a live lease (a
	// rejection sent it back, or its runner died). Tasks in q.Exclude are left out.
	// On PostgreSQL the rows are locked and rows locked by another claim skipped.
	ReadyTasks(ctx context.Context, q ReadyQuery) ([]Task, error)
	// RenewLeases moves lease_until to until on those of ids that owner still holds
	// (lease_owner = owner, state in_progress), which keeps their slots, and returns
	// their ids; the others were lost (cancelled, blocked or taken over by someone else).
	RenewLeases(ctx context.Context, owner string, ids []int64, until time.Time) ([]int64, error)
	// ReleaseLease clears the lease of task id if owner holds it, without touching
	// anything else, so another runner may take the task at once.
	ReleaseLease(ctx context.Context, owner string, id int64) error
}

// WorkerLoad is a worker agent and the number of its slots busy now.
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

// SlotClaim is a slot a claim takes: for task TaskID, of agent AgentID, for runner
// Owner. Leases that ended before Now no longer hold their slots.
type SlotClaim struct {
	AgentID, TaskID int64
	Owner           string
	Now             time.Time
	// Held are the tasks this claim already gave a slot whose lease it has not
	// written yet (models.WriteBehind holds it until the batch ends): their slots
	// are busy though their rows do not say so yet.
	Held []int64
}
