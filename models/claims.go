package models

import (
	"context"
	"time"
)

// Claimer is the part of a store the runner pool claims work with. It is a separate
// interface from Store so that only the runner depends on it; the gorm store's DB and
// the Tx it hands to InTx implement it. A claim calls WorkerLoads, ReadyTasks,
// LockFreeSlots and AssignSlots on the Tx of one InTx, in that order: the task rows
// and slot rows they lock stay locked until the claim commits, and other runners skip
// them instead of waiting (PostgreSQL SKIP LOCKED), so several runner processes claim
// side by side on one database without handing out a task or an agent slot twice. No
// agent row is locked.
type Claimer interface {
	// WorkerLoads returns the enabled worker agents, each with the number of its
	// slots that are busy (Running: slots below its concurrency whose task holds the
	// slot's runner's lease past now). Nothing is locked: it tells the claim which
	// agents may have room and which is least busy; the slots LockFreeSlots locks
	// are what enforces the concurrency.
	WorkerLoads(ctx context.Context, now time.Time) ([]WorkerLoad, error)
	// LockFreeSlots locks, for this claim, the free slots of the agents in want (agent
	// ID to the number of slots the claim may use of it) and returns them by agent,
	// lowest first: slots below the agent's concurrency that hold no task, and when
	// those are fewer than wanted, also those whose task no longer holds the lease of
	// the slot's runner (ended, passed before now, taken over). On PostgreSQL slots
	// other claims hold are skipped, never waited for. The slots stay locked until the
	// claim ends, so the claim hands them out in memory; AssignSlots writes what it
	// handed out, and the lease the claim writes on each task keeps its slot busy.
	LockFreeSlots(ctx context.Context, want map[int64]int, now time.Time) (map[int64][]int, error)
	// AssignSlots writes each take's task and owner into its slot (one LockFreeSlots
	// returned), with one statement on PostgreSQL.
	AssignSlots(ctx context.Context, owner string, takes []SlotTake) error
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

// SlotTake is a slot a claim gives a task: slot Slot of agent AgentID, for task
// TaskID.
type SlotTake struct {
	AgentID int64
	Slot    int
	TaskID  int64
}
