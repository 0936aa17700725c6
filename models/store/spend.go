package store

import (
	"context"
	"math"
	"time"

	"github.com/countersign/countersign/models"
)

var _ models.ModelSpendStore = (*DB)(nil)

// meteredSpendRow is a row of MeteredSpend's query.
type meteredSpendRow struct {
	Day        string
	AgentID    int64
	CostUSD    float64
	Tokens     int64
	Attempts   int
	Unpriced   int
	Mismatches int
}

// MeteredSpend sums, per agent and UTC day of their start, the cost and tokens of the
// attempts whose usage the model gateway metered (attempts.usage_source), in one
// grouped statement over the (usage_source, started_at) index.
func (o *ops) MeteredSpend(ctx context.Context, q models.ModelSpendQuery) ([]models.ModelSpendDay, error) {
	day := o.dayExpr("a.started_at")
	sq := o.q(ctx).Table("attempts AS a").Select(day+` AS day, a.agent_id,
		COALESCE(SUM(a.cost_usd), 0) AS cost_usd, COALESCE(SUM(a.tokens), 0) AS tokens, COUNT(*) AS attempts,
		COUNT(CASE WHEN a.cost_usd IS NULL AND a.tokens IS NOT NULL THEN 1 END) AS unpriced,
		COUNT(CASE WHEN a.usage_mismatch THEN 1 END) AS mismatches`).
		Where("a.usage_source = ? AND a.started_at >= ? AND a.started_at < ?", models.UsageMetered, normTime(q.Since), normTime(q.Until))
	if q.AgentID != 0 {
		sq = sq.Where("a.agent_id = ?", q.AgentID)
	}
	var rows []meteredSpendRow
	if err := sq.Group(day + ", a.agent_id").Scan(&rows).Error; err != nil {
		return nil, mapError(err, "attempts")
	}
	out := make([]models.ModelSpendDay, 0, len(rows))
	for _, r := range rows {
		d, err := time.Parse(time.DateOnly, r.Day)
		if err != nil {
			return nil, models.Errorf(models.EINTERNAL, "attempts: day %q: %v", r.Day, err)
		}
		out = append(out, models.ModelSpendDay{Day: d, AgentID: r.AgentID, CostUSD: math.Round(r.CostUSD*1e6) / 1e6,
			Tokens: r.Tokens, Attempts: r.Attempts, Unpriced: r.Unpriced, Mismatches: r.Mismatches})
	}
	return out, nil
}
