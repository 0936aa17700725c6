package store_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
)

// TestListGoalsAfterID pages through goals newest first with the keyset cursor, alone
// and with the state and project filters.
func TestListGoalsAfterID(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		lead := agent(t, db, "lead", "lead")
		var ids []int64
		for i := 0; i < 7; i++ {
			g := &models.Goal{Title: "g", Project: "web", CreatorID: lead.ID}
			if i%2 == 1 {
				g.State, g.Project = models.GoalActive, "api"
			}
			must(t, db.CreateGoal(ctx, g))
			ids = append(ids, g.ID)
		}
		list := func(f models.GoalFilter) []int64 {
			t.Helper()
			gs, err := db.ListGoals(ctx, f)
			must(t, err)
			out := []int64{}
			for _, g := range gs {
				out = append(out, g.ID)
			}
			return out
		}
		of := func(xs ...int64) []int64 { return xs }
		cases := []struct {
			f    models.GoalFilter
			want []int64
		}{
			{models.GoalFilter{Limit: 3}, of(ids[6], ids[5], ids[4])},
			{models.GoalFilter{Limit: 3, AfterID: ids[4]}, of(ids[3], ids[2], ids[1])},
			{models.GoalFilter{Limit: 3, AfterID: ids[1]}, of(ids[0])},
			{models.GoalFilter{AfterID: ids[0]}, of()},
			{models.GoalFilter{AfterID: ids[6] + 100}, of(ids[6], ids[5], ids[4], ids[3], ids[2], ids[1], ids[0])},
			{models.GoalFilter{State: models.GoalActive, AfterID: ids[5]}, of(ids[3], ids[1])},
			{models.GoalFilter{Project: "web", AfterID: ids[4], Limit: 1}, of(ids[2])},
		}
		for _, c := range cases {
			if got := list(c.f); !slices.Equal(got, c.want) {
				t.Errorf("ListGoals(%+v) = %v, want %v", c.f, got, c.want)
			}
		}
	})
}

// TestCountGoals counts goals per state with every state present, beyond the 1,000 a
// list returns at most: 1,500 goals are inserted with one statement.
func TestCountGoals(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		counts, err := db.CountGoals(ctx)
		must(t, err)
		if len(counts) != len(models.GoalStates) {
			t.Fatalf("CountGoals on no goals = %v, want every state", counts)
		}
		for s, n := range counts {
			if n != 0 {
				t.Errorf("CountGoals on no goals: %s = %d", s, n)
			}
		}

		lead := agent(t, db, "lead", "lead")
		for _, s := range []models.GoalState{models.GoalActive, models.GoalActive, models.GoalVerified} {
			must(t, db.CreateGoal(ctx, &models.Goal{Title: "g", State: s, CreatorID: lead.ID}))
		}
		must(t, db.Gorm().WithContext(ctx).Exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1500)
			INSERT INTO goals (title, state) SELECT 'bulk', 'open' FROM n`).Error)

		counts, err = db.CountGoals(ctx)
		must(t, err)
		want := map[models.GoalState]int{models.GoalOpen: 1500, models.GoalActive: 2, models.GoalPendingVerify: 0, models.GoalVerified: 1}
		if len(counts) != len(want) {
			t.Fatalf("CountGoals = %v, want %v", counts, want)
		}
		for s, n := range want {
			if counts[s] != n {
				t.Errorf("CountGoals[%s] = %d, want %d", s, counts[s], n)
			}
		}
		// Inside a transaction too.
		must(t, db.InTx(ctx, func(tx models.Tx) error {
			c, err := tx.CountGoals(ctx)
			if err == nil && c[models.GoalOpen] != 1500 {
				t.Errorf("CountGoals in a transaction = %v", c)
			}
			return err
		}))
	})
}

// TestCountTasksByGoal: one query gives what CountTasks gives goal by goal, with every
// asked-for goal present (also one with no tasks) and tasks of other goals left out.
func TestCountTasksByGoal(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		boss := agent(t, db, "boss", "lead")
		var goals []int64
		for _, title := range []string{"a", "b", "empty", "other"} {
			g := &models.Goal{Title: title}
			must(t, db.CreateGoal(ctx, g))
			goals = append(goals, g.ID)
		}
		states := map[int64][]models.TaskState{
			goals[0]: {models.TaskPending, models.TaskPending, models.TaskVerified},
			goals[1]: {models.TaskBlocked},
			goals[3]: {models.TaskVerified, models.TaskCancelled},
		}
		for g, ss := range states {
			for _, s := range ss {
				must(t, db.CreateTask(ctx, &models.Task{Title: "t", Role: "developer", State: s, GoalID: &g, CreatorID: boss.ID}))
			}
		}
		asked := goals[:3]
		got, err := db.CountTasksByGoal(ctx, asked)
		must(t, err)
		if len(got) != len(asked) {
			t.Fatalf("%d goals counted, want %d: %v", len(got), len(asked), got)
		}
		for _, g := range asked {
			want, err := db.CountTasks(ctx, g)
			must(t, err)
			equal(t, fmt.Sprintf("counts of goal %d", g), got[g], want)
		}
		none, err := db.CountTasksByGoal(ctx, nil)
		must(t, err)
		if len(none) != 0 {
			t.Fatalf("no goals asked, got %v", none)
		}
	})
}
