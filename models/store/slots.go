package store

import (
	"context"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/countersign/countersign/models"
)

// Per-agent concurrency is counted by slot rows (agent_slots, migration 0025), not by
// locking agents: a worker agent has one row per unit of its concurrency, and a claim
// that hands a task to the agent takes one free row with FOR UPDATE SKIP LOCKED and
// writes the task and its lease into it. Two runners' claims then take different
// slots of the same agent side by side, and the agent rows are never locked, so no
// lock spans the fleet (issue #34). The number of live leases of an agent can never
// exceed its slots below its concurrency, whoever claims: every claim takes a slot,
// and a slot holds one task.
//
// A slot is free when task_id is NULL or its lease_until has passed. Two triggers on
// tasks (migration 0025) keep it in step with its task's lease, whichever code path
// writes the task: tasks_lease_extended renews it when the owner extends the lease
// (the heartbeat, a settle keeping the lease for the next attempt), and
// tasks_lease_ended frees it when the lease ends (lease_owner goes to ''). Both conditions are on the slot row itself, so PostgreSQL's recheck of a row
// another claim just committed sees it taken: a condition read from another table
// would be read from the statement's snapshot and could hand the slot out twice.

// agentSlotRecord is one unit of a worker agent's concurrency.
type agentSlotRecord struct {
	AgentID    int64 `gorm:"primaryKey;autoIncrement:false"`
	Slot       int   `gorm:"primaryKey;autoIncrement:false"`
	TaskID     *int64
	RunnerID   string
	LeaseUntil *time.Time
}

func (agentSlotRecord) TableName() string { return "agent_slots" }

// slotFree is the WHERE term of a free slot; its one argument is now.
const slotFree = "(task_id IS NULL OR lease_until < ?)"

// slotLimit is the number of slots a claim may use of the agent agent_slots.agent_id:
// its concurrency (at least one) when it is an enabled worker, NULL (no slot) when not.
// A slot at or above it is a surplus left by a lowered concurrency or a disabled agent
// while its task runs: never taken again, removed by syncSlots once free.
const slotLimit = "(SELECT CASE WHEN a.concurrency < 1 THEN 1 ELSE a.concurrency END FROM agents a" +
	" WHERE a.id = agent_slots.agent_id AND a.kind = ? AND a.disabled = ?)"

// lockSkip adds FOR UPDATE SKIP LOCKED to q on PostgreSQL: the slot rows a statement
// takes or frees are never waited for (see TakeSlot). SQLite has one writer.
func (o *ops) lockSkip(q *gorm.DB) *gorm.DB {
	if o.db.dialect == DialectPostgres {
		return q.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"})
	}
	return q
}

// syncSlots keeps the slots of a in step with it, in the transaction that writes a:
// an enabled worker has slots 0 .. concurrency-1; free slots beyond that (or of an
// agent that is no longer an enabled worker) are removed. A taken slot stays until its
// task's lease ends, so that lowering the concurrency does not make a running task
// lose count; claims never take it again (slotLimit).
func (o *ops) syncSlots(ctx context.Context, a *models.Agent) error {
	n := 0
	if a.Kind == models.KindWorker && !a.Disabled {
		n = max(a.Concurrency, 1)
	}
	surplus := o.lockSkip(o.q(ctx).Model(&agentSlotRecord{}).Select("agent_id, slot").
		Where("agent_id = ? AND slot >= ? AND "+slotFree, a.ID, n, normTime(now())))
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
	var rows []struct {
		AgentID int64
		N       int
	}
	err = o.q(ctx).Model(&agentSlotRecord{}).Select("agent_id, COUNT(*) AS n").
		Where(slotFree+" AND slot < "+slotLimit, normTime(now), string(models.KindWorker), false).
		Group("agent_id").Scan(&rows).Error
	if err != nil {
		return nil, mapError(err, "agent slots")
	}
	free := make(map[int64]int, len(rows))
	for _, r := range rows {
		free[r.AgentID] = r.N
	}
	out := make([]models.WorkerLoad, 0, len(recs))
	for i := range recs {
		a, err := fromAgentRecord(&recs[i])
		if err != nil {
			return nil, err
		}
		o.memoAgent(a)
		out = append(out, models.WorkerLoad{Agent: *a, Running: max(a.Concurrency, 1) - free[a.ID]})
	}
	return out, nil
}

// TakeSlot gives task s.TaskID the lowest free slot of agent s.AgentID; see
// models.Claimer. One UPDATE whose subquery picks and locks the slot: on PostgreSQL a
// slot another claim holds is skipped, never waited for, and one it committed a
// moment ago is rechecked on its new row (taken: skipped too).
func (o *ops) TakeSlot(ctx context.Context, s models.SlotClaim) (bool, error) {
	pick := o.lockSkip(o.q(ctx).Model(&agentSlotRecord{}).Select("slot").
		Where("agent_id = ? AND "+slotFree+" AND slot < "+slotLimit,
			s.AgentID, normTime(s.Now), string(models.KindWorker), false).
		Order("slot").Limit(1))
	res := o.q(ctx).Model(&agentSlotRecord{}).Where("agent_id = ? AND slot = (?)", s.AgentID, pick).
		Updates(map[string]any{"task_id": s.TaskID, "runner_id": s.Owner, "lease_until": normTime(s.Until)})
	if res.Error != nil {
		return false, mapError(res.Error, "agent slots")
	}
	return res.RowsAffected == 1, nil
}

// FreeSlots frees the slots that hold task id; see models.Claimer. A slot another
// transaction holds is skipped: a claim is giving it to another task.
func (o *ops) FreeSlots(ctx context.Context, id int64) error {
	held := o.lockSkip(o.q(ctx).Model(&agentSlotRecord{}).Select("agent_id, slot").Where("task_id = ?", id))
	err := o.q(ctx).Model(&agentSlotRecord{}).Where("(agent_id, slot) IN (?)", held).
		Updates(map[string]any{"task_id": nil, "runner_id": "", "lease_until": nil}).Error
	return mapError(err, "agent slots")
}
