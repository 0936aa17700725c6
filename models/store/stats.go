package store

import (
	"context"
	"encoding/json"
	"time"

	"gorm.io/gorm"

	"github.com/countersign/countersign/models"
)

var _ models.StatsStore = (*DB)(nil)

// attemptFactRow is a row of the scorecard's attempts query.
type attemptFactRow struct {
	TaskID     int64
	AgentID    int64
	Outcome    string
	Stage      string
	StartedAt  time.Time
	FinishedAt *time.Time
	CostUSD    *float64
	Tokens     *int64
	// UsageMismatch is attempts.usage_mismatch.
	UsageMismatch bool
	Role          string
	State         string
	Rejections    int
	Override      bool
	VerifiedAt    *time.Time
}

// blockFactRow is a row of the scorecard's blocks query.
type blockFactRow struct {
	TaskID    int64
	Role      string
	Payload   string
	CreatedAt time.Time
}

// StatsFacts reads the attempts started in the window with their tasks' standing
// (one query, task by task in attempt order), and the blocked inbox items made in it
// (a second), each block's agent and last stage read from its payload.
func (o *ops) StatsFacts(ctx context.Context, q models.StatsQuery) (models.StatsFacts, error) {
	var out models.StatsFacts
	aq := o.q(ctx).Table("attempts AS a").Joins("JOIN tasks AS t ON t.id = a.task_id").
		Select(`a.task_id, a.agent_id, a.outcome, a.stage, a.started_at, a.finished_at, a.cost_usd, a.tokens,
			a.usage_mismatch, t.role, t.state, t.rejections, t.override, t.verified_at`).
		Where("a.started_at >= ? AND a.started_at < ?", normTime(q.Since), normTime(q.Until)).
		Where("t.canary = ''") // canary tasks are not work: the honesty section counts them
	if q.AgentID != 0 {
		aq = aq.Where("a.agent_id = ?", q.AgentID)
	}
	if q.Role != "" {
		aq = aq.Where("t.role = ?", q.Role)
	}
	var rows []attemptFactRow
	if err := aq.Order("a.task_id, a.number, a.id").Scan(&rows).Error; err != nil {
		return out, mapError(err, "attempts")
	}
	for _, r := range rows {
		out.Attempts = append(out.Attempts, models.AttemptFact{TaskID: r.TaskID, AgentID: r.AgentID, Outcome: r.Outcome,
			Stage: r.Stage, StartedAt: normTime(r.StartedAt), FinishedAt: normTimePtr(r.FinishedAt), CostUSD: r.CostUSD,
			Tokens: r.Tokens, UsageMismatch: r.UsageMismatch, Role: r.Role, State: models.TaskState(r.State), Rejections: r.Rejections, Override: r.Override,
			VerifiedAt: normTimePtr(r.VerifiedAt)})
	}
	bq := o.q(ctx).Table("inbox_items AS i").Joins("JOIN tasks AS t ON t.id = i.task_id").
		Select("i.task_id, t.role, i.payload, i.created_at").
		Where("i.kind = ? AND i.created_at >= ? AND i.created_at < ?", models.InboxBlocked, normTime(q.Since), normTime(q.Until)).
		Where("t.canary = ''")
	if q.Role != "" {
		bq = bq.Where("t.role = ?", q.Role)
	}
	var blocks []blockFactRow
	if err := bq.Order("i.id").Scan(&blocks).Error; err != nil {
		return out, mapError(err, "inbox items")
	}
	for _, b := range blocks {
		f := models.BlockFact{TaskID: b.TaskID, Role: b.Role, At: normTime(b.CreatedAt)}
		var p models.BlockedPayload
		// A payload that is not the blocked payload still counts as a block, of no
		// agent and stage (kind other).
		if json.Unmarshal([]byte(b.Payload), &p) == nil {
			f.Agent = p.Agent
			if n := len(p.Attempts); n > 0 {
				f.Stage = p.Attempts[n-1].Stage
			}
		}
		out.Blocks = append(out.Blocks, f)
	}
	return out, nil
}

// dayExpr is the SQL for col's UTC day as YYYY-MM-DD: times are stored in UTC.
func (o *ops) dayExpr(col string) string {
	if o.db.dialect == DialectPostgres {
		return "to_char(" + col + " AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
	}
	return "substr(" + col + ", 1, 10)"
}

// goalCreatedQuery counts goal goalID's tasks per day of creation, from the index
// tasks_goal_created_idx alone (0024): a goal may hold 60,000 tasks.
func (o *ops) goalCreatedQuery(ctx context.Context, goalID int64) *gorm.DB {
	day := o.dayExpr("created_at")
	return o.q(ctx).Table("tasks").Select(day+" AS day, COUNT(*) AS n").Where("goal_id = ?", goalID).Group(day)
}

// goalVerifiedQuery counts goal goalID's verified tasks per day of verification, from
// the index tasks_goal_verified_idx alone (0024).
func (o *ops) goalVerifiedQuery(ctx context.Context, goalID int64) *gorm.DB {
	day := o.dayExpr("verified_at")
	return o.q(ctx).Table("tasks").Select(day+" AS day, COUNT(*) AS n").
		Where("goal_id = ? AND state = ? AND verified_at IS NOT NULL", goalID, models.TaskVerified).Group(day)
}

// dayCountRow is a row of a per-day count.
type dayCountRow struct {
	Day string
	N   int
}

// GoalProgressFacts counts goal goalID's tasks created per day, its tasks done per
// day (verified ones by verified_at, cancelled ones by their task.cancelled event),
// and its failed attempts per stage: four grouped queries.
func (o *ops) GoalProgressFacts(ctx context.Context, goalID int64) (models.GoalProgressFacts, error) {
	var out models.GoalProgressFacts
	perDay := func(what string, q func() ([]dayCountRow, error)) ([]models.DayCount, error) {
		rows, err := q()
		if err != nil {
			return nil, mapError(err, what)
		}
		var days []models.DayCount
		for _, r := range rows {
			d, err := time.Parse(time.DateOnly, r.Day)
			if err != nil {
				return nil, models.Errorf(models.EINTERNAL, "%s: day %q: %v", what, r.Day, err)
			}
			days = append(days, models.DayCount{Day: d, N: r.N})
		}
		return days, nil
	}
	created, err := perDay("tasks", func() (rows []dayCountRow, err error) {
		err = o.goalCreatedQuery(ctx, goalID).Scan(&rows).Error
		return rows, err
	})
	if err != nil {
		return out, err
	}
	verified, err := perDay("tasks", func() (rows []dayCountRow, err error) {
		err = o.goalVerifiedQuery(ctx, goalID).Scan(&rows).Error
		return rows, err
	})
	if err != nil {
		return out, err
	}
	cancelled, err := perDay("events", func() (rows []dayCountRow, err error) {
		day := o.dayExpr("c.at")
		sub := o.q(ctx).Table("events AS e").Joins("JOIN tasks AS t ON t.id = e.task_id").
			Select("e.task_id, MAX(e.created_at) AS at").
			Where("t.goal_id = ? AND t.state = ? AND e.type = ?", goalID, models.TaskCancelled, "task.cancelled").
			Group("e.task_id")
		err = o.q(ctx).Table("(?) AS c", sub).Select(day + " AS day, COUNT(*) AS n").Group(day).Scan(&rows).Error
		return rows, err
	})
	if err != nil {
		return out, err
	}
	out.Created, out.Done = created, append(verified, cancelled...)
	var stages []struct {
		Stage string
		N     int
	}
	if err := o.q(ctx).Table("attempts AS a").Joins("JOIN tasks AS t ON t.id = a.task_id").
		Select("a.stage, COUNT(*) AS n").Where("t.goal_id = ? AND a.outcome = ?", goalID, models.OutcomeFailed).
		Group("a.stage").Scan(&stages).Error; err != nil {
		return out, mapError(err, "attempts")
	}
	out.Failures = map[string]int{}
	for _, s := range stages {
		if s.Stage != "" {
			out.Failures[s.Stage] += s.N
		}
	}
	return out, nil
}
