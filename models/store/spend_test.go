package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/models/store/storetest"
)

// TestMeteredSpendPerAgentPerDay: MeteredSpend sums only the attempts whose usage the
// gateway metered, per agent and UTC day of their start, inside the window, and counts
// the unpriced and the mismatched; StatsFacts reads each attempt's mismatch flag back.
// A worker's own report (Source "") costs nothing here, however large.
func TestMeteredSpendPerAgentPerDay(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		w1, w2 := agent(t, db, "w1", "dev"), agent(t, db, "w2", "dev")
		tk := task(t, db, w1.ID, "dev", nil)
		n := 0
		add := func(who *models.Agent, start time.Time, u *models.Usage) {
			n++
			end := start.Add(time.Minute)
			must(t, db.CreateAttempt(ctx, &models.Attempt{TaskID: tk.ID, Number: n, AgentID: who.ID, Outcome: models.OutcomePassed,
				StartedAt: start, FinishedAt: &end, Usage: u}))
		}
		metered := func(cost float64, tokens int64) *models.Usage {
			return &models.Usage{Source: models.UsageMetered, CostUSD: &cost, InputTokens: &tokens, Model: "m"}
		}
		add(w1, day(4, 1, 0), metered(0.5, 1000))
		add(w1, day(4, 23, 59), metered(0.25, 500))
		flagged := metered(1, 2000)
		flagged.Reported, flagged.Mismatch = &models.Usage{CostUSD: ptr(0.1)}, "the worker reported a cost of $0.10; the gateway metered $1.00"
		add(w1, day(5, 0, 0), flagged)
		add(w2, day(4, 12, 0), &models.Usage{Source: models.UsageMetered, InputTokens: ptr(int64(300)), Model: "unpriced"})
		add(w2, day(4, 13, 0), &models.Usage{CostUSD: ptr(99.0), InputTokens: ptr(int64(99)), Model: "m"}) // reported
		add(w2, day(4, 14, 0), nil)
		add(w1, day(2, 12, 0), metered(7, 7)) // before the window
		add(w1, day(9, 12, 0), metered(7, 7)) // at its end: excluded

		got, err := db.MeteredSpend(ctx, models.ModelSpendQuery{Since: day(3, 0, 0), Until: day(9, 12, 0)})
		must(t, err)
		slices.SortFunc(got, func(a, b models.ModelSpendDay) int {
			if c := a.Day.Compare(b.Day); c != 0 {
				return c
			}
			return int(a.AgentID - b.AgentID)
		})
		d4, d5 := time.Date(2025, 3, 4, 0, 0, 0, 0, time.UTC), time.Date(2025, 3, 5, 0, 0, 0, 0, time.UTC)
		want := []models.ModelSpendDay{
			{Day: d4, AgentID: w1.ID, CostUSD: 0.75, Tokens: 1500, Attempts: 2},
			{Day: d4, AgentID: w2.ID, Tokens: 300, Attempts: 1, Unpriced: 1},
			{Day: d5, AgentID: w1.ID, CostUSD: 1, Tokens: 2000, Attempts: 1, Mismatches: 1},
		}
		equal(t, "MeteredSpend", got, want)
		one, err := db.MeteredSpend(ctx, models.ModelSpendQuery{Since: day(3, 0, 0), Until: day(9, 12, 0), AgentID: w2.ID})
		must(t, err)
		equal(t, "MeteredSpend of w2", one, want[1:2])

		facts, err := db.StatsFacts(ctx, models.StatsQuery{Since: day(3, 0, 0), Until: day(9, 0, 0), AgentID: w1.ID})
		must(t, err)
		var flags []bool
		for _, a := range facts.Attempts {
			flags = append(flags, a.UsageMismatch)
		}
		if !slices.Equal(flags, []bool{false, false, true}) {
			t.Fatalf("StatsFacts mismatch flags = %v, want [false false true]", flags)
		}
	})
}

// TestMigration21ReadsUsageSource upgrades a database holding attempts from version
// 20: an attempt whose usage JSON says it was metered (and flagged) counts as metered
// spend after the upgrade; a reported one, and one whose note merely quotes the words,
// do not.
func TestMigration21ReadsUsageSource(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			db, err := store.Open(ctx, storetest.Empty(t, dialect))
			must(t, err)
			defer db.Close()
			must(t, db.MigrateTo(ctx, 20))
			var agentID, taskID int64
			must(t, db.SQL().QueryRowContext(ctx, "INSERT INTO agents (name, kind) VALUES ('w', 'worker') RETURNING id").Scan(&agentID))
			must(t, db.SQL().QueryRowContext(ctx, "INSERT INTO tasks (title, role, state) VALUES ('t', 'dev', 'pending') RETURNING id").Scan(&taskID))
			for i, u := range []string{
				`{"input_tokens":100,"cost_usd":0.5,"source":"metered","reported":{"cost_usd":0.1},"mismatch":"differs"}`,
				`{"input_tokens":100,"cost_usd":2}`,
				`{"input_tokens":100,"cost_usd":4,"note":"said \"source\":\"metered\""}`,
			} {
				_, err := db.SQL().ExecContext(ctx, `INSERT INTO attempts (task_id, number, agent_id, outcome, usage, cost_usd, tokens, started_at)
					VALUES ($1, $2, $3, 'passed', $4, $5, 100, $6)`, taskID, i+1, agentID, u, []float64{0.5, 2, 4}[i], day(4, 10+i, 0))
				must(t, err)
			}
			must(t, db.Migrate(ctx))
			got, err := db.MeteredSpend(ctx, models.ModelSpendQuery{Since: day(4, 0, 0), Until: day(5, 0, 0)})
			must(t, err)
			want := []models.ModelSpendDay{{Day: time.Date(2025, 3, 4, 0, 0, 0, 0, time.UTC), AgentID: agentID, CostUSD: 0.5, Tokens: 100, Attempts: 1, Mismatches: 1}}
			equal(t, "MeteredSpend after the upgrade", got, want)
		})
	}
}
