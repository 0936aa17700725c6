// Package agent is an agent's scorecard page: its figures over the last 7 or 30 days
// (tasks taken, first-pass, revision and block rates, median and p90 attempt
// duration, spend, attempts flagged for a usage mismatch), split by task role, with
// daily bars of verified and blocked work, a histogram of its attempts' durations —
// server-rendered SVG, readable without JavaScript — and what the model gateway
// metered for it per day.
package agent

import (
	"strconv"

	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
)

// View is the scorecard page's model.
type View struct {
	Meta  layout.PageMeta
	ID    int64
	Name  string
	Kind  string
	Roles []string
	Days  int
	// Window says which days are counted ("3 Mar – 9 Mar 2025 (UTC)").
	Window string
	// Figures are the agent's scorecard; ByRole its takes split by task role.
	Figures components.ScoreRow
	ByRole  []components.ScoreRow
	// BlockedWork, BlockedInfra and BlockedOther count the blocks by kind.
	BlockedWork, BlockedInfra, BlockedOther int
	Attempts                                int
	Daily, Durations                        components.BarChart
	// UsageMismatches counts the attempts flagged because the worker's usage report
	// differed from what the model gateway metered.
	UsageMismatches int
	// Spend is what the model gateway metered for the agent per day.
	Spend components.ModelSpendProps
	// Honesty is the honesty section (honesty.go).
	Honesty Honesty
}

func href(id int64) string { return "/agents/" + strconv.FormatInt(id, 10) }

func itoa(n int) string { return strconv.Itoa(n) }
