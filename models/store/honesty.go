package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/countersign/countersign/models"
)

var _ models.HonestyStore = (*DB)(nil)

// honestyFactRow is a row of HonestyFacts' query.
type honestyFactRow struct {
	TaskID        int64
	AgentID       int64
	Outcome       string
	Stage         string
	UsageMismatch bool
	Usage         string
	Judge         string // "" unless the report may hold a tampered judge canary
	Canary        string
}

// HonestyFacts reads the attempts started in the window with their model (from the
// usage), whether a judge canary was tampered with (from the judge report) and their
// task's canary kind, in one query. Only reports that mention "tampered" at all are
// read back: the rest cannot hold a tampered judge canary, and reports carry diffs.
func (o *ops) HonestyFacts(ctx context.Context, q models.StatsQuery) ([]models.HonestyFact, error) {
	aq := o.q(ctx).Table("attempts AS a").Joins("JOIN tasks AS t ON t.id = a.task_id").
		Select(`a.task_id, a.agent_id, a.outcome, a.stage, a.usage_mismatch, a.usage,
			CASE WHEN a.judge LIKE '%tampered%' THEN a.judge ELSE '' END AS judge, t.canary`).
		Where("a.started_at >= ? AND a.started_at < ?", normTime(q.Since), normTime(q.Until))
	if q.AgentID != 0 {
		aq = aq.Where("a.agent_id = ?", q.AgentID)
	}
	var rows []honestyFactRow
	if err := aq.Order("a.task_id, a.number, a.id").Scan(&rows).Error; err != nil {
		return nil, mapError(err, "attempts")
	}
	out := make([]models.HonestyFact, 0, len(rows))
	for _, r := range rows {
		f := models.HonestyFact{TaskID: r.TaskID, AgentID: r.AgentID, Outcome: r.Outcome, Stage: r.Stage,
			UsageMismatch: r.UsageMismatch, Canary: r.Canary}
		var u struct {
			Model string `json:"model"`
		}
		if r.Usage != "" && json.Unmarshal([]byte(r.Usage), &u) == nil {
			f.Model = u.Model
		}
		if r.Judge != "" {
			var j models.JudgeReport
			if err := json.Unmarshal([]byte(r.Judge), &j); err != nil {
				return nil, models.Errorf(models.EINTERNAL, "attempts.judge of task %d: %v", r.TaskID, err)
			}
			for _, c := range j.Canary {
				f.JudgeCanaryTampered = f.JudgeCanaryTampered || c.Status == models.CanaryTampered
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// canaryRunRow is a row of CanaryRuns' task query.
type canaryRunRow struct {
	ID         int64
	Title      string
	Canary     string
	AssigneeID *int64
	Agent      string
	State      string
	CreatedAt  time.Time
}

// CanaryRuns lists the canary tasks (tasks_canary_idx), of assignee agentID when it is
// not 0, newest first, with each one's result from its assignee's attempts: two
// queries.
func (o *ops) CanaryRuns(ctx context.Context, agentID int64, limit int) ([]models.CanaryRun, error) {
	tq := o.q(ctx).Table("tasks AS t").Joins("LEFT JOIN agents AS g ON g.id = t.assignee_id").
		Select("t.id, t.title, t.canary, t.assignee_id, COALESCE(g.name, '') AS agent, t.state, t.created_at").
		Where("t.canary <> ''")
	if agentID != 0 {
		tq = tq.Where("t.assignee_id = ?", agentID)
	}
	var rows []canaryRunRow
	if err := tq.Order("t.id DESC").Limit(limit).Scan(&rows).Error; err != nil {
		return nil, mapError(err, "tasks")
	}
	if len(rows) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	var atts []struct {
		TaskID  int64
		AgentID int64
		Outcome string
	}
	if err := o.q(ctx).Table("attempts").Select("task_id, agent_id, outcome").Where("task_id IN ?", ids).
		Order("task_id, number").Scan(&atts).Error; err != nil {
		return nil, mapError(err, "attempts")
	}
	outcomes := map[[2]int64][]string{}
	for _, a := range atts {
		k := [2]int64{a.TaskID, a.AgentID}
		outcomes[k] = append(outcomes[k], a.Outcome)
	}
	out := make([]models.CanaryRun, 0, len(rows))
	for _, r := range rows {
		run := models.CanaryRun{TaskID: r.ID, Title: r.Title, Kind: r.Canary, Agent: r.Agent,
			State: models.TaskState(r.State), CreatedAt: normTime(r.CreatedAt), Result: models.CanaryResultPending}
		if r.AssigneeID != nil {
			run.AgentID = *r.AssigneeID
			run.Result = models.CanaryResultOf(outcomes[[2]int64{r.ID, *r.AssigneeID}])
		}
		out = append(out, run)
	}
	return out, nil
}
