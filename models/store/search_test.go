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
