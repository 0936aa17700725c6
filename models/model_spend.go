package models

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"
)

// ModelSpendQuery selects the attempts MeteredSpend sums: those whose usage the model
// gateway metered (Usage.Source UsageMetered), started in [Since, Until), of AgentID
// when it is not 0.
type ModelSpendQuery struct {
	Since, Until time.Time
	AgentID      int64
}

// ModelSpendDay is what the model gateway metered for one agent's attempts started on
// one UTC day. A running attempt counts with what was metered when it was last saved:
// the gateway's figures are money spent, not a reservation.
type ModelSpendDay struct {
	Day     time.Time `json:"day"`
	AgentID int64     `json:"agent_id"`
	// Agent is the agent's name (StatsService.ModelSpend sets it; the store leaves it "").
	Agent    string  `json:"agent"`
	CostUSD  float64 `json:"cost_usd"`
	Tokens   int64   `json:"tokens"`
	Attempts int     `json:"attempts"`
	// Unpriced counts the metered attempts whose cost is unknown (a model without a
	// price): they cost nothing here.
	Unpriced int `json:"unpriced,omitempty"`
	// Mismatches counts the attempts whose worker reported other usage than the
	// gateway metered (Usage.Mismatch).
	Mismatches int `json:"mismatches,omitempty"`
}

// ModelSpendStore is the part of a store StatsService.ModelSpend reads; the gorm store's
// DB implements it.
type ModelSpendStore interface {
	// MeteredSpend sums the cost and tokens of the attempts q selects per agent and
	// UTC day of their start, in no promised order.
	MeteredSpend(ctx context.Context, q ModelSpendQuery) ([]ModelSpendDay, error)
}

// ModelSpend is the model gateway's spend per agent per day over a window.
type ModelSpend struct {
	Days  int       `json:"days"`
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	// Rows are newest day first, then by agent name; days without metered spend
	// have no row.
	Rows []ModelSpendDay `json:"rows"`
	// Total sums the rows (its Reserved fields are unused).
	Total Spend `json:"total"`
}

// ModelSpend is what the model gateway metered per agent per UTC day over the last
// days (7 or 30) days, of agent agentID when it is not 0. Whoever may read scorecards
// (which show spend) may read it: any signed-in agent, but not a request made with an
// attempt token.
func (s *StatsService) ModelSpend(ctx context.Context, viewer *Agent, days int, agentID int64) (*ModelSpend, error) {
	if err := viewer.Unscoped("read model spend"); err != nil {
		return nil, err
	}
	if err := CheckStatsDays(days); err != nil {
		return nil, err
	}
	st, ok := s.store.(ModelSpendStore)
	if !ok {
		return nil, Errorf(EINTERNAL, "this store keeps no model spend")
	}
	since, until := StatsWindow(s.now(), days)
	rows, err := st.MeteredSpend(ctx, ModelSpendQuery{Since: since, Until: until.Add(time.Microsecond), AgentID: agentID})
	if err != nil {
		return nil, err
	}
	agents, err := s.store.ListAgents(ctx)
	if err != nil {
		return nil, err
	}
	names := map[int64]string{}
	for _, a := range agents {
		names[a.ID] = a.Name
	}
	out := &ModelSpend{Days: days, Since: since, Until: until, Rows: rows}
	for i := range out.Rows {
		r := &out.Rows[i]
		r.Agent = names[r.AgentID]
		out.Total.CostUSD += r.CostUSD
		out.Total.Tokens += r.Tokens
		out.Total.Unpriced += r.Unpriced
	}
	out.Total.CostUSD = math.Round(out.Total.CostUSD*1e6) / 1e6
	slices.SortFunc(out.Rows, func(a, b ModelSpendDay) int {
		return cmp.Or(b.Day.Compare(a.Day), cmp.Compare(a.Agent, b.Agent), cmp.Compare(a.AgentID, b.AgentID))
	})
	return out, nil
}
