package store_test

import (
	"slices"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
)

// TestSearchTasksAndGoals finds tasks by a substring of their title or brief and
// goals by one of their title or description, in any case, newest first, up to the
// limit; it follows renames (the SQLite index is kept by triggers) and takes LIKE's
// wildcards and FTS5's quotes as plain text.
func TestSearchTasksAndGoals(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		lead := agent(t, db, "lead", "lead")
		mk := func(title, brief string) int64 {
			tk := &models.Task{Title: title, Brief: brief, Role: "dev", CreatorID: lead.ID}
			must(t, db.CreateTask(ctx, tk))
			return tk.ID
		}
		login := mk("Fix the Login form", "")
		brief := mk("Other", "the login page loses the pasted text")
		odd := mk(`100% "quoted" under_score`, "")
		mk("Unrelated", "nothing here")
		g := &models.Goal{Title: "Ship login", Description: "", CreatorID: lead.ID}
		must(t, db.CreateGoal(ctx, g))
		g2 := &models.Goal{Title: "Billing", Description: "then LOGIN again", CreatorID: lead.ID}
		must(t, db.CreateGoal(ctx, g2))

		tasks := func(text string, limit int) []int64 {
			t.Helper()
			list, err := db.SearchTasks(ctx, text, limit)
			must(t, err)
			ids := []int64{}
			for _, tk := range list {
				ids = append(ids, tk.ID)
			}
			return ids
		}
		check := func(what string, got, want []int64) {
			t.Helper()
			if !slices.Equal(got, want) {
				t.Errorf("%s = %v, want %v", what, got, want)
			}
		}
		check("login", tasks("LOGIN", 10), []int64{brief, login})
		check("login limit 1", tasks("login", 1), []int64{brief})
		check("100%", tasks("100%", 10), []int64{odd})
		check("% wildcard", tasks("0%_", 10), []int64{})
		check("quotes", tasks(`"quoted"`, 10), []int64{odd})
		check("none", tasks("zzz", 10), []int64{})

		tk, err := db.GetTask(ctx, login)
		must(t, err)
		tk.Title = "Fix the sign-in form"
		must(t, db.UpdateTask(ctx, tk))
		check("login after rename", tasks("login", 10), []int64{brief})
		check("sign-in", tasks("sign-in", 10), []int64{login})

		goals, err := db.SearchGoals(ctx, "login", 10)
		must(t, err)
		if len(goals) != 2 || goals[0].ID != g2.ID || goals[1].ID != g.ID {
			t.Errorf("goals = %+v, want %d, %d", goals, g2.ID, g.ID)
		}
	})
}

// TestListSorts pages through tasks and goals sorted by update and by creation,
// newest first with the id breaking ties, with the keyset cursor, alone and with a
// filter.
func TestListSorts(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		lead := agent(t, db, "lead", "lead")
		// created minutes 0..4; updated minutes 9, 3, 9, 1, 5: ties at 9.
		updated := []int{9, 3, 9, 1, 5}
		var ids, goals []int64
		for i, u := range updated {
			tk := &models.Task{Title: "t", Role: "dev", CreatorID: lead.ID, CreatedAt: ts(i), UpdatedAt: ts(u)}
			if i%2 == 0 {
				tk.State = models.TaskAssigned
			}
			must(t, db.CreateTask(ctx, tk))
			ids = append(ids, tk.ID)
			g := &models.Goal{Title: "g", CreatorID: lead.ID, CreatedAt: ts(i), UpdatedAt: ts(u)}
			must(t, db.CreateGoal(ctx, g))
			goals = append(goals, g.ID)
		}
		page := func(f models.TaskFilter) []int64 {
			t.Helper()
			var out []int64
			for {
				f.Limit = 2
				list, err := db.ListTasks(ctx, f)
				must(t, err)
				for _, tk := range list {
					out = append(out, tk.ID)
				}
				if len(list) < 2 {
					return out
				}
				f.AfterID = list[len(list)-1].ID
			}
		}
		by := func(xs []int64, order ...int) []int64 {
			out := []int64{}
			for _, i := range order {
				out = append(out, xs[i])
			}
			return out
		}
		cases := []struct {
			f    models.TaskFilter
			want []int64
		}{
			{models.TaskFilter{}, by(ids, 4, 3, 2, 1, 0)},
			{models.TaskFilter{Sort: models.ListSortCreated}, by(ids, 4, 3, 2, 1, 0)},
			{models.TaskFilter{Sort: models.ListSortUpdated}, by(ids, 2, 0, 4, 1, 3)},
			{models.TaskFilter{Sort: models.ListSortUpdated, State: models.TaskAssigned}, by(ids, 2, 0, 4)},
		}
		for _, c := range cases {
			if got := page(c.f); !slices.Equal(got, c.want) {
				t.Errorf("%+v: %v, want %v", c.f, got, c.want)
			}
		}
		list, err := db.ListGoals(ctx, models.GoalFilter{Sort: models.ListSortUpdated, AfterID: goals[0]})
		must(t, err)
		got := []int64{}
		for _, g := range list {
			got = append(got, g.ID)
		}
		if want := by(goals, 4, 1, 3); !slices.Equal(got, want) {
			t.Errorf("goals by update after %d: %v, want %v", goals[0], got, want)
		}
	})
}
