package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/countersign/countersign/models"
)

// Per-agent concurrency is counted by slot rows (agent_slots, migration 0025), not by
// locking agents: a worker agent has one row per unit of its concurrency, and a claim
// locks the free rows of the agents it may use with FOR UPDATE SKIP LOCKED, hands
// them to tasks in memory, and writes each task and the claiming runner into its
// row. Two runners' claims then take different slots of the same agent side by side,
// and the agent rows are never locked, so no lock spans the fleet (issue #34). An
// agent never has more live leases than slots below its concurrency, whoever claims:
// every claim takes a slot, and a slot holds one task.
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

// slotUsableSQL is the condition on a slot s of agent a that a claim may use it: below
// the agent's concurrency (at least one) when it is an enabled worker. A slot at or
// above the concurrency is a surplus left by a lowered concurrency or a disabled agent
// while its task runs: never taken again, removed by syncSlots once free.
const slotUsableSQL = `a.kind = 'worker' AND a.disabled = FALSE AND s.slot < CASE WHEN a.concurrency < 1 THEN 1 ELSE a.concurrency END`

// slotEmptySQL picks up to $n empty slots of agent $agent, lowest first.
const slotEmptySQL = `SELECT s.agent_id, s.slot FROM agent_slots s JOIN agents a ON a.id = s.agent_id
WHERE s.agent_id = $agent AND s.task_id IS NULL AND ` + slotUsableSQL + ` ORDER BY s.slot LIMIT $n`

// slotStaleSQL picks up to $n slots of agent $agent whose task no longer holds the
// slot's lease ($now); see the comment at the top of the file for its locks.
const slotStaleSQL = `SELECT s.agent_id, s.slot FROM agent_slots s JOIN agents a ON a.id = s.agent_id JOIN tasks t ON t.id = s.task_id
WHERE s.agent_id = $agent AND ` + slotUsableSQL + `
AND (t.lease_owner <> s.runner_id OR t.state <> 'in_progress' OR t.lease_until IS NULL OR t.lease_until < $now)
ORDER BY s.slot LIMIT $n`

// slotsPerAgentSQL runs pick (slotEmptySQL or slotStaleSQL, locking) for every
// (agent, n) of two arrays, in one statement.
const slotsPerAgentSQL = `SELECT x.agent_id, x.slot FROM unnest($1::bigint[], $2::int[]) AS w(agent_id, n)
CROSS JOIN LATERAL (%s) x`

// LockFreeSlots locks the free slots of the agents in want, at most want[id] of
// agent id; see models.Claimer. Empty slots first; slots whose lease ended only for
// the agents that have fewer empty ones than wanted (the trigger tasks_lease_ended
// empties most slots as their leases end, so that second statement is rare). On
// PostgreSQL each is one statement for every agent, slots another claim holds are
// skipped, never waited for, and one it committed a moment ago is rechecked on its new
// row (taken: skipped too). The agent rows are read, not locked. SQLite, with one
// claimer at a time, asks agent by agent.
func (o *ops) LockFreeSlots(ctx context.Context, want map[int64]int, now time.Time) (map[int64][]int, error) {
	free := make(map[int64][]int, len(want))
	empty, stale := slotEmptySQL, slotStaleSQL
	if o.db.dialect == DialectPostgres {
		empty += " FOR UPDATE OF s SKIP LOCKED"
		stale += " FOR UPDATE OF s SKIP LOCKED FOR KEY SHARE OF t SKIP LOCKED"
	}
	if err := o.pickSlots(ctx, free, empty, want, now); err != nil {
		return nil, err
	}
	short := map[int64]int{}
	for id, n := range want {
		if n > len(free[id]) {
			short[id] = n - len(free[id])
		}
	}
	return free, o.pickSlots(ctx, free, stale, short, now)
}

// pickSlots adds to free the slots pick selects for each agent of want.
func (o *ops) pickSlots(ctx context.Context, free map[int64][]int, pick string, want map[int64]int, now time.Time) error {
	agents, ns := make([]int64, 0, len(want)), make([]int32, 0, len(want))
	for id, n := range want {
		if n > 0 {
			agents, ns = append(agents, id), append(ns, int32(n))
		}
	}
	if len(agents) == 0 {
		return nil
	}
	if o.db.dialect == DialectSQLite {
		for i, id := range agents {
			q := strings.NewReplacer("$agent", "?", "$now", "?", "$n", "?").Replace(pick)
			args := []any{id, ns[i]}
			if strings.Contains(pick, "$now") {
				args = []any{id, normTime(now), ns[i]}
			}
			if err := o.scanSlots(ctx, free, q, args...); err != nil {
				return err
			}
		}
		return nil
	}
	q := fmt.Sprintf(slotsPerAgentSQL, strings.NewReplacer("$agent", "w.agent_id", "$now", "$3", "$n", "w.n").Replace(pick))
	args := []any{agents, ns}
	if strings.Contains(pick, "$now") {
		args = append(args, normTime(now))
	}
	rows, err := o.g.Statement.ConnPool.QueryContext(ctx, q, args...)
	if err != nil {
		return mapError(err, "agent slots")
	}
	defer rows.Close()
	for rows.Next() {
		var agent int64
		var slot int
		if err := rows.Scan(&agent, &slot); err != nil {
			return mapError(err, "agent slots")
		}
		free[agent] = append(free[agent], slot)
	}
	return mapError(rows.Err(), "agent slots")
}

// scanSlots adds the (agent_id, slot) rows query selects to free.
func (o *ops) scanSlots(ctx context.Context, free map[int64][]int, query string, args ...any) error {
	var rows []struct {
		AgentID int64
		Slot    int
	}
	if err := o.q(ctx).Raw(query, args...).Scan(&rows).Error; err != nil {
		return mapError(err, "agent slots")
	}
	for _, r := range rows {
		free[r.AgentID] = append(free[r.AgentID], r.Slot)
	}
	return nil
}

// assignSlotsSQL writes tasks and their owner into slots, from three arrays of the
// same length (agent ids, slots, task ids).
const assignSlotsSQL = `UPDATE agent_slots s SET task_id = v.task_id, runner_id = $1
FROM unnest($2::bigint[], $3::int[], $4::bigint[]) AS v(agent_id, slot, task_id)
WHERE s.agent_id = v.agent_id AND s.slot = v.slot`

// AssignSlots writes the takes into their slots; see models.Claimer. On PostgreSQL it
// is one fixed statement over arrays, sent through the transaction's connection (pgx's
// database/sql driver) rather than built by gorm: it runs for every claim on every
// runner. SQLite, in process, updates the slots one by one.
func (o *ops) AssignSlots(ctx context.Context, owner string, takes []models.SlotTake) error {
	if len(takes) == 0 {
		return nil
	}
	if o.db.dialect == DialectSQLite {
		for _, t := range takes {
			err := o.q(ctx).Model(&agentSlotRecord{}).Where("agent_id = ? AND slot = ?", t.AgentID, t.Slot).
				Updates(map[string]any{"task_id": t.TaskID, "runner_id": owner}).Error
			if err != nil {
				return mapError(err, "agent slots")
			}
		}
		return nil
	}
	agents, slots, tasks := make([]int64, len(takes)), make([]int32, len(takes)), make([]int64, len(takes))
	for i, t := range takes {
		agents[i], slots[i], tasks[i] = t.AgentID, int32(t.Slot), t.TaskID
	}
	res, err := o.g.Statement.ConnPool.ExecContext(ctx, assignSlotsSQL, owner, agents, slots, tasks)
	if err != nil {
		return mapError(err, "agent slots")
	}
	if n, err := res.RowsAffected(); err != nil || n != int64(len(takes)) {
		return mapError(fmt.Errorf("store: assigned %d agent slots, want %d (%v)", n, len(takes), err), "agent slots")
	}
	return nil
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

// busySlotsSQL counts the busy slots of the agent row a: below its concurrency, whose
// task holds the slot's live lease (the first ? is in_progress, the second now).
const busySlotsSQL = `(SELECT COUNT(*) FROM agent_slots s JOIN tasks t ON t.id = s.task_id
WHERE s.agent_id = agents.id AND s.slot < CASE WHEN agents.concurrency < 1 THEN 1 ELSE agents.concurrency END
AND t.lease_owner = s.runner_id AND t.state = ? AND t.lease_until >= ?) AS running`

// WorkerLoads returns the enabled worker agents with their busy slots, in one
// statement; see models.Claimer.
func (o *ops) WorkerLoads(ctx context.Context, now time.Time) ([]models.WorkerLoad, error) {
	var rows []struct {
		Agent   agentRecord `gorm:"embedded"`
		Running int
	}
	err := o.q(ctx).Model(&agentRecord{}).Select("agents.*, "+busySlotsSQL, string(models.TaskInProgress), normTime(now)).
		Where("kind = ? AND disabled = ?", string(models.KindWorker), false).Order("id").Find(&rows).Error
	if err != nil {
		return nil, mapError(err, "agents")
	}
	out := make([]models.WorkerLoad, 0, len(rows))
	for i := range rows {
		a, err := fromAgentRecord(&rows[i].Agent)
		if err != nil {
			return nil, err
		}
		o.memoAgent(a)
		out = append(out, models.WorkerLoad{Agent: *a, Running: rows[i].Running})
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
