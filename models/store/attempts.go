package store

import (
	"context"
	"time"

	"github.com/countersign/countersign/models"
)

// attemptRecord is a row of attempts; checks and criteria are JSON arrays.
type attemptRecord struct {
	ID          int64 `gorm:"primaryKey"`
	TaskID      int64
	Number      int
	AgentID     int64
	RunnerID    string
	Outcome     string
	Stage       string
	Diagnosis   string
	Checks      string
	Criteria    string
	Judge       string
	Deliverable string
	Usage       string
	// UsageSource and UsageMismatch are the usage's Source and whether its Mismatch is
	// set, for sums of metered spend and counts of flagged attempts.
	UsageSource   string
	UsageMismatch bool
	// Network is the egress proxy's log (JSON), "" for none.
	Network string
	// CostUSD and Tokens are the usage's totals, for sums over attempts.
	CostUSD        *float64
	Tokens         *int64
	ReservedUSD    *float64
	ReservedTokens *int64
	ExitCode       int
	OutputTail     string
	OutputHash     string
	LogPath        string
	Brief          string
	Triage         bool
	StartedAt      time.Time
	FinishedAt     *time.Time
}

func (attemptRecord) TableName() string { return "attempts" }

func toAttemptRecord(a *models.Attempt) (*attemptRecord, error) {
	checks, err := toJSON(a.Checks, "[]")
	if err != nil {
		return nil, err
	}
	criteria, err := toJSON(a.Criteria, "[]")
	if err != nil {
		return nil, err
	}
	judge := ""
	if a.Judge != nil {
		if judge, err = toJSON(a.Judge, ""); err != nil {
			return nil, err
		}
	}
	deliverable := ""
	if a.Deliverable != nil {
		if deliverable, err = toJSON(a.Deliverable, ""); err != nil {
			return nil, err
		}
	}
	usage, err := toJSON(a.Usage, "")
	if err != nil {
		return nil, err
	}
	if a.Usage.Empty() {
		usage = ""
	}
	network := ""
	if a.Network != nil {
		if network, err = toJSON(a.Network, ""); err != nil {
			return nil, err
		}
	}
	rec := &attemptRecord{
		Usage:          usage,
		Network:        network,
		CostUSD:        costOf(a.Usage),
		Tokens:         a.Usage.Tokens(),
		ReservedUSD:    a.ReservedUSD,
		ReservedTokens: a.ReservedTokens,
		ID:             a.ID,
		TaskID:         a.TaskID,
		Number:         a.Number,
		AgentID:        a.AgentID,
		RunnerID:       a.RunnerID,
		Outcome:        a.Outcome,
		Stage:          a.Stage,
		Diagnosis:      a.Diagnosis,
		Checks:         checks,
		Criteria:       criteria,
		Judge:          judge,
		Deliverable:    deliverable,
		ExitCode:       a.ExitCode,
		OutputTail:     a.OutputTail,
		OutputHash:     a.OutputHash,
		LogPath:        a.LogPath,
		Brief:          a.Brief,
		Triage:         a.Triage,
		StartedAt:      normTime(a.StartedAt),
		FinishedAt:     normTimePtr(a.FinishedAt),
	}
	if a.Usage != nil {
		rec.UsageSource, rec.UsageMismatch = a.Usage.Source, a.Usage.Mismatch != ""
	}
	return rec, nil
}

func fromAttemptRecord(r *attemptRecord) (*models.Attempt, error) {
	a := &models.Attempt{
		ID:         r.ID,
		TaskID:     r.TaskID,
		Number:     r.Number,
		AgentID:    r.AgentID,
		RunnerID:   r.RunnerID,
		Outcome:    r.Outcome,
		Stage:      r.Stage,
		Diagnosis:  r.Diagnosis,
		ExitCode:   r.ExitCode,
		OutputTail: r.OutputTail,
		OutputHash: r.OutputHash,
		LogPath:    r.LogPath,
		Brief:      r.Brief,
		Triage:     r.Triage,
		StartedAt:  normTime(r.StartedAt),
		FinishedAt: normTimePtr(r.FinishedAt),

		ReservedUSD:    r.ReservedUSD,
		ReservedTokens: r.ReservedTokens,
	}
	if err := fromJSON(r.Usage, &a.Usage, "attempts.usage"); err != nil {
		return nil, err
	}
	if err := fromJSON(r.Checks, &a.Checks, "attempts.checks"); err != nil {
		return nil, err
	}
	if a.Checks == nil {
		a.Checks = []models.CheckResult{}
	}
	if err := fromJSON(r.Criteria, &a.Criteria, "attempts.criteria"); err != nil {
		return nil, err
	}
	if len(a.Criteria) == 0 {
		a.Criteria = nil
	}
	if r.Judge != "" {
		a.Judge = &models.JudgeReport{}
		if err := fromJSON(r.Judge, a.Judge, "attempts.judge"); err != nil {
			return nil, err
		}
	}
	if r.Deliverable != "" {
		a.Deliverable = &models.Deliverable{}
		if err := fromJSON(r.Deliverable, a.Deliverable, "attempts.deliverable"); err != nil {
			return nil, err
		}
	}
	if r.Network != "" {
		a.Network = &models.NetworkLog{}
		if err := fromJSON(r.Network, a.Network, "attempts.network"); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// costOf is u's cost, nil when unknown.
func costOf(u *models.Usage) *float64 {
	if u == nil {
		return nil
	}
	return u.CostUSD
}

// CreateAttempt stores an attempt and sets a.ID; a zero StartedAt is set to now and
// an empty outcome to running.
func (o *ops) CreateAttempt(ctx context.Context, a *models.Attempt) error {
	if a.StartedAt.IsZero() {
		a.StartedAt = now()
	}
	if a.Outcome == "" {
		a.Outcome = models.OutcomeRunning
	}
	rec, err := toAttemptRecord(a)
	if err != nil {
		return err
	}
	rec.ID = 0
	if err := o.q(ctx).Create(rec).Error; err != nil {
		return mapError(err, "attempt")
	}
	out, err := fromAttemptRecord(rec)
	if err != nil {
		return err
	}
	*a = *out
	return nil
}

// UpdateAttempt saves every field of a.
func (o *ops) UpdateAttempt(ctx context.Context, a *models.Attempt) error {
	rec, err := toAttemptRecord(a)
	if err != nil {
		return err
	}
	res := o.q(ctx).Model(rec).Select("*").Omit("id").Updates(rec)
	if res.Error != nil {
		return mapError(res.Error, "attempt")
	}
	if res.RowsAffected == 0 {
		return models.NotFound("attempt", a.ID)
	}
	out, err := fromAttemptRecord(rec)
	if err != nil {
		return err
	}
	*a = *out
	return nil
}

// ListAttempts returns a task's attempts in the order they were made.
func (o *ops) ListAttempts(ctx context.Context, taskID int64) ([]models.Attempt, error) {
	var recs []attemptRecord
	if err := o.q(ctx).Where("task_id = ?", taskID).Order("number, id").Find(&recs).Error; err != nil {
		return nil, mapError(err, "attempts")
	}
	out := make([]models.Attempt, 0, len(recs))
	for i := range recs {
		a, err := fromAttemptRecord(&recs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, *a)
	}
	return out, nil
}

// SpendOf sums the cost and tokens of the finished attempts in scope and what the
// running ones reserved, in one statement.
func (o *ops) SpendOf(ctx context.Context, scope models.SpendScope) (models.Spend, error) {
	q := o.q(ctx).Table("attempts AS a").Select(`
		COALESCE(SUM(CASE WHEN a.outcome = ? THEN 0 ELSE COALESCE(a.cost_usd, 0) END), 0) AS cost_usd,
		COALESCE(SUM(CASE WHEN a.outcome = ? THEN 0 ELSE COALESCE(a.tokens, 0) END), 0) AS tokens,
		COALESCE(SUM(CASE WHEN a.outcome = ? THEN COALESCE(a.reserved_usd, 0) ELSE 0 END), 0) AS reserved_usd,
		COALESCE(SUM(CASE WHEN a.outcome = ? THEN COALESCE(a.reserved_tokens, 0) ELSE 0 END), 0) AS reserved_tokens,
		COUNT(CASE WHEN a.outcome <> ? AND a.cost_usd IS NULL AND a.tokens IS NOT NULL THEN 1 END) AS unpriced`,
		models.OutcomeRunning, models.OutcomeRunning, models.OutcomeRunning, models.OutcomeRunning, models.OutcomeRunning)
	switch {
	case scope.TaskID != 0:
		q = q.Where("a.task_id = ?", scope.TaskID)
	case scope.GoalID != 0:
		q = q.Joins("JOIN tasks AS t ON t.id = a.task_id").Where("t.goal_id = ?", scope.GoalID)
	}
	if scope.AgentID != 0 {
		q = q.Where("a.agent_id = ?", scope.AgentID)
	}
	if !scope.Since.IsZero() {
		q = q.Where("a.started_at >= ?", normTime(scope.Since))
	}
	var row struct {
		CostUSD        float64
		Tokens         int64
		ReservedUSD    float64
		ReservedTokens int64
		Unpriced       int
	}
	if err := q.Scan(&row).Error; err != nil {
		return models.Spend{}, mapError(err, "attempts")
	}
	return models.Spend{CostUSD: row.CostUSD, Tokens: row.Tokens, ReservedUSD: row.ReservedUSD,
		ReservedTokens: row.ReservedTokens, Unpriced: row.Unpriced}, nil
}
