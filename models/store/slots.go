package store

import (
	"context"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/countersign/countersign/models"
)

// Per-agent concurrency is counted by slot rows (agent_slots, migration 0025), not by
// locking agents: a worker agent has one row per unit of its concurrency, and a claim
// that hands a task to the agent takes one free row with FOR UPDATE SKIP LOCKED and
// writes the task and the claiming runner into it. Two runners' claims then take
// different slots of the same agent side by side, and the agent rows are never
// locked, so no lock spans the fleet (issue #34). An agent never has more live leases
// than slots below its concurrency, whoever claims: every claim takes a slot, and a
// slot holds one task.
//
// The task's lease is the one truth about whether its slot is busy: a slot is free when
// it names no task, or when that task no longer holds the lease the slot records
// (lease_owner is not the slot's runner, the lease passed, or the task left
// in_progress). So renewing a lease needs no write to the slot, and a lease that ends
// by any code path frees the slot. The trigger tasks_lease_ended also clears the slot
// when a lease ends, so that the common case is the cheap test (task_id IS NULL); a
// slot it had to leave (a claim held the row) is found by the second test.
//
// That second test reads the task row with a row lock (FOR KEY SHARE, which no update
// of a task conflicts with, so it never waits nor blocks anyone): PostgreSQL then
// rechecks it on the task's newest committed version, like the slot row's. Read
// without a lock, the task would be read as of the statement's start, and a slot
// another claim re-pointed and committed a moment before would look free: handed out
// twice.

// agentSlotRecord is one unit of a worker agent's concurrency.
type agentSlotRecord struct {
	AgentID  int64 `gorm:"primaryKey;autoIncrement:false"`
	Slot     int   `gorm:"primaryKey;autoIncrement:false"`
	TaskID   *int64
	RunnerID string
}

func (agentSlotRecord) TableName() string { return "agent_slots" }

// slotLimitSQL is the number of slots a claim may use of the agent $3:
// its concurrency (at least one) when it is an enabled worker, NULL (no slot) when not.
// A slot at or above it is a surplus left by a lowered concurrency or a disabled agent
// while its task runs: never taken again, removed by syncSlots once free.
const slotLimitSQL = `(SELECT CASE WHEN a.concurrency < 1 THEN 1 ELSE a.concurrency END FROM agents a
WHERE a.id = $3 AND a.kind = 'worker' AND a.disabled = FALSE)`

// slotEmptySQL picks the agent's lowest slot that names no task.
const slotEmptySQL = `SELECT s.slot FROM agent_slots s
WHERE s.agent_id = $3 AND s.task_id IS NULL AND s.slot < ` + slotLimitSQL + `
ORDER BY s.slot LIMIT 1`

// slotStaleSQL picks the agent's lowest slot whose task no longer holds the slot's
// lease ($4 is now); see the comment at the top of the file for its locks.
const slotStaleSQL = `SELECT s.slot FROM agent_slots s JOIN tasks t ON t.id = s.task_id
WHERE s.agent_id = $3 AND s.slot < ` + slotLimitSQL + `
AND (t.lease_owner <> s.runner_id OR t.state <> 'in_progress' OR t.lease_until IS NULL OR t.lease_until < $4)
ORDER BY s.slot LIMIT 1`

// takeSlotSQL writes the task ($1) and runner ($2) into the slot a pick chooses.
const takeSlotSQL = `UPDATE agent_slots SET task_id = $1, runner_id = $2 WHERE agent_id = $3 AND slot = (`

// TakeSlot gives task s.TaskID a free slot of agent s.AgentID; see models.Claimer.
// First an empty slot, else one whose task's lease ended: each one UPDATE whose
// subquery picks and locks the slot. On PostgreSQL a slot another claim holds is
// skipped, never waited for, and one it committed a moment ago is rechecked on its new
// row (taken: skipped too).
//
// It runs for every claimed task, on every runner, so its statements are fixed SQL
// sent through the transaction's connection (pgx's database/sql driver on
// PostgreSQL) rather than built by gorm for each call.
func (o *ops) TakeSlot(ctx context.Context, s models.SlotClaim) (bool, error) {
	empty, stale := slotEmptySQL, slotStaleSQL
	if o.db.dialect == DialectPostgres {
		empty += " FOR UPDATE SKIP LOCKED"
		stale += " FOR UPDATE OF s SKIP LOCKED FOR KEY SHARE OF t SKIP LOCKED"
	}
	if len(s.Held) > 0 {
		// Slots taken earlier in this claim, whose task's lease is still held back:
		// busy, though the stale test would call them free.
		held := make([]string, len(s.Held))
		for i, id := range s.Held {
			held[i] = strconv.FormatInt(id, 10)
		}
		stale = strings.Replace(stale, "ORDER BY", "AND s.task_id NOT IN ("+strings.Join(held, ",")+") ORDER BY", 1)
	}
	args := []any{s.TaskID, s.Owner, s.AgentID, normTime(s.Now)}
	for i, pick := range []string{empty, stale} {
		res, err := o.g.Statement.ConnPool.ExecContext(ctx, takeSlotSQL+pick+")", args[:3+i]...)
		if err != nil {
			return false, mapError(err, "agent slots")
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return n == 1, mapError(err, "agent slots")
		}
	}
	return false, nil
}

// lockSkip adds FOR UPDATE SKIP LOCKED to q on PostgreSQL: the slot rows a statement
// frees are never waited for. SQLite has one writer.
func (o *ops) lockSkip(q *gorm.DB) *gorm.DB {
	if o.db.dialect == DialectPostgres {
		return q.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"})
	}
	return q
}

// syncSlots keeps the slots of a in step with it, in the transaction that writes a:
// an enabled worker has slots 0 .. concurrency-1; empty slots beyond that (or of an
// agent that is no longer an enabled worker) are removed. A taken slot stays until its
// task's lease ends, so that lowering the concurrency does not make a running task
// lose count; claims never take it again (slotLimitSQL).
func (o *ops) syncSlots(ctx context.Context, a *models.Agent) error {
	n := 0
	if a.Kind == models.KindWorker && !a.Disabled {
		n = max(a.Concurrency, 1)
	}
	surplus := o.lockSkip(o.q(ctx).Model(&agentSlotRecord{}).Select("agent_id, slot").
		Where("agent_id = ? AND slot >= ? AND task_id IS NULL", a.ID, n))
	if err := o.q(ctx).Where("(agent_id, slot) IN (?)", surplus).Delete(&agentSlotRecord{}).Error; err != nil {
		return mapError(err, "agent slots")
	}
	if n == 0 {
		return nil
	}
	recs := make([]agentSlotRecord, n)
	for i := range recs {
		recs[i] = agentSlotRecord{AgentID: a.ID, Slot: i}
	}
	err := o.q(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&recs).Error
	return mapError(err, "agent slots")
}

// WorkerLoads returns the enabled worker agents with their busy slots; see
// models.Claimer.
func (o *ops) WorkerLoads(ctx context.Context, now time.Time) ([]models.WorkerLoad, error) {
	var recs []agentRecord
	err := o.q(ctx).Where("kind = ? AND disabled = ?", string(models.KindWorker), false).Order("id").Find(&recs).Error
	if err != nil {
		return nil, mapError(err, "agents")
	}
	if len(recs) == 0 {
		return nil, nil
	}
	// Busy: a slot below the concurrency whose task holds the slot's live lease.
	var rows []struct {
		AgentID int64
		N       int
	}
	err = o.q(ctx).Table("agent_slots s").Select("s.agent_id, COUNT(*) AS n").
		Joins("JOIN agents a ON a.id = s.agent_id").
		Joins("JOIN tasks t ON t.id = s.task_id").
		Where("a.kind = ? AND a.disabled = ? AND s.slot < CASE WHEN a.concurrency < 1 THEN 1 ELSE a.concurrency END",
			string(models.KindWorker), false).
		Where("t.lease_owner = s.runner_id AND t.state = ? AND t.lease_until >= ?", string(models.TaskInProgress), normTime(now)).
		Group("s.agent_id").Scan(&rows).Error
	if err != nil {
		return nil, mapError(err, "agent slots")
	}
	busy := make(map[int64]int, len(rows))
	for _, r := range rows {
		busy[r.AgentID] = r.N
	}
	out := make([]models.WorkerLoad, 0, len(recs))
	for i := range recs {
		a, err := fromAgentRecord(&recs[i])
		if err != nil {
			return nil, err
		}
		o.memoAgent(a)
		out = append(out, models.WorkerLoad{Agent: *a, Running: busy[a.ID]})
	}
	return out, nil
}

// FreeSlots clears the slots that name task id; see models.Claimer. A slot another
// transaction holds is skipped: a claim is giving it to another task.
func (o *ops) FreeSlots(ctx context.Context, id int64) error {
	held := o.lockSkip(o.q(ctx).Model(&agentSlotRecord{}).Select("agent_id, slot").Where("task_id = ?", id))
	err := o.q(ctx).Model(&agentSlotRecord{}).Where("(agent_id, slot) IN (?)", held).
		Updates(map[string]any{"task_id": nil, "runner_id": ""}).Error
	return mapError(err, "agent slots")
}
