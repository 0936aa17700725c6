package models

import (
	"cmp"
	"slices"
	"time"
)

// AgentRef names an agent in statistics.
type AgentRef struct {
	ID    int64    `json:"id"`
	Name  string   `json:"name"`
	Kind  string   `json:"kind"`
	Roles []string `json:"roles"`
}

// RoleScorecard is the scorecard of one task role.
type RoleScorecard struct {
	Role string `json:"role"`
	Scorecard
}

// AgentStats is one agent's scorecard over a window with its charts' data: the
// answer of GET /api/v1/agents/{id}/stats.
type AgentStats struct {
	Agent     AgentRef  `json:"agent"`
	Scorecard Scorecard `json:"scorecard"`
	// Roles splits the agent's takes by their tasks' roles, ranked.
	Roles []RoleScorecard `json:"roles"`
	// Daily has one bar per day of the window; Durations is the histogram of its
	// attempts' durations.
	Daily     []DayBar       `json:"daily"`
	Durations []HistogramBin `json:"durations"`
	// Honesty is the agent's honesty section (scorecard_honesty.go); nil when the
	// store keeps none.
	Honesty *AgentHonestyCard `json:"honesty,omitempty"`
}

// AgentScore is one agent's row of the ranking.
type AgentScore struct {
	Agent AgentRef `json:"agent"`
	Scorecard
}

// ScoreBoard ranks every agent and every task role over a window.
type ScoreBoard struct {
	Days   int             `json:"days"`
	Since  time.Time       `json:"since"`
	Until  time.Time       `json:"until"`
	Agents []AgentScore    `json:"agents"`
	Roles  []RoleScorecard `json:"roles"`
	// Honesty is the honesty section per agent and per model (scorecard_honesty.go);
	// nil when the store keeps none.
	Honesty *HonestyBoard `json:"honesty,omitempty"`
}

// AgentStatsOf computes agent a's stats from facts of the window (attempts of any
// agent may be among them: only a's count, and the blocks of tasks assigned to a).
func AgentStatsOf(a *Agent, days int, since, until time.Time, facts StatsFacts) AgentStats {
	attempts, blocks := forAgent(a, facts)
	st := AgentStats{Agent: refOf(a), Scorecard: ComputeScorecard(days, since, until, attempts, blocks),
		Daily: DailyBars(since, until, attempts, blocks), Durations: DurationHistogram(Durations(attempts))}
	st.Roles = roleScorecards(days, since, until, attempts, blocks)
	return st
}

// BoardOf ranks agents and the task roles by facts of the window.
func BoardOf(agents []Agent, days int, since, until time.Time, facts StatsFacts) ScoreBoard {
	b := ScoreBoard{Days: days, Since: since, Until: until}
	for i := range agents {
		a := &agents[i]
		if a.Kind == KindSystem {
			continue
		}
		attempts, blocks := forAgent(a, facts)
		b.Agents = append(b.Agents, AgentScore{Agent: refOf(a), Scorecard: ComputeScorecard(days, since, until, attempts, blocks)})
	}
	slices.SortStableFunc(b.Agents, func(x, y AgentScore) int {
		return cmp.Or(Rank(x.Scorecard, y.Scorecard), cmp.Compare(x.Agent.Name, y.Agent.Name))
	})
	b.Roles = roleScorecards(days, since, until, facts.Attempts, facts.Blocks)
	return b
}

// forAgent keeps a's attempts, and the blocks of the tasks assigned to a when
// blocked.
func forAgent(a *Agent, facts StatsFacts) ([]AttemptFact, []BlockFact) {
	var attempts []AttemptFact
	for _, f := range facts.Attempts {
		if f.AgentID == a.ID {
			attempts = append(attempts, f)
		}
	}
	var blocks []BlockFact
	for _, b := range facts.Blocks {
		if b.Agent == a.Name {
			blocks = append(blocks, b)
		}
	}
	return attempts, blocks
}

// roleScorecards is a scorecard per task role of attempts and blocks, ranked.
func roleScorecards(days int, since, until time.Time, attempts []AttemptFact, blocks []BlockFact) []RoleScorecard {
	byRole := map[string][]AttemptFact{}
	blocksOf := map[string][]BlockFact{}
	for _, a := range attempts {
		byRole[a.Role] = append(byRole[a.Role], a)
	}
	for _, b := range blocks {
		blocksOf[b.Role] = append(blocksOf[b.Role], b)
		if _, ok := byRole[b.Role]; !ok {
			byRole[b.Role] = nil
		}
	}
	out := make([]RoleScorecard, 0, len(byRole))
	for role, as := range byRole {
		out = append(out, RoleScorecard{Role: role, Scorecard: ComputeScorecard(days, since, until, as, blocksOf[role])})
	}
	slices.SortFunc(out, func(x, y RoleScorecard) int {
		return cmp.Or(Rank(x.Scorecard, y.Scorecard), cmp.Compare(x.Role, y.Role))
	})
	return out
}

// Rank orders scorecards best first: those with takes before those without, then by
// first-pass rate (higher first), block rate (lower first), verified takes (more
// first).
func Rank(x, y Scorecard) int {
	if (x.Taken == 0) != (y.Taken == 0) {
		if x.Taken == 0 {
			return 1
		}
		return -1
	}
	if x.Taken == 0 {
		return 0
	}
	return cmp.Or(
		-cmp.Compare(*x.FirstPassRate, *y.FirstPassRate),
		cmp.Compare(*x.BlockRate, *y.BlockRate),
		-cmp.Compare(x.Verified, y.Verified),
	)
}

func refOf(a *Agent) AgentRef {
	return AgentRef{ID: a.ID, Name: a.Name, Kind: string(a.Kind), Roles: a.Roles}
}
