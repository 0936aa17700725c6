package pages_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
)

// TestListSortAndFilters: the task and goal lists sort by last update and by
// creation as well as by number, the order and the filters stay in the URL (the
// Older link keeps them), the filter forms submit on change (data-autosubmit, with
// their button kept for pages without script), and "#N" is taken as goal N.
func TestListSortAndFilters(t *testing.T) {
	t.Parallel()
	handlertest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		e := newEnv(t, dialect)
		e.team()
		g := &models.Goal{Title: "Sorted"}
		if err := e.svc.Goals.CreateGoal(e.ctx(), models.System, g); err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for range 52 {
			tk, err := e.svc.Tasks.CreateTask(e.ctx(), models.System, models.TaskSpec{Title: "Task", Role: "developer", GoalID: &g.ID})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, tk.ID)
		}
		// The oldest task is the last updated.
		oldest, err := e.svc.Store().GetTask(e.ctx(), ids[0])
		if err != nil {
			t.Fatal(err)
		}
		oldest.UpdatedAt = time.Now().UTC().Add(time.Hour)
		if err := e.svc.Store().UpdateTask(e.ctx(), oldest); err != nil {
			t.Fatal(err)
		}
		b := e.browser().login("lead")
		rows := func(body string) []string {
			var out []string
			for _, m := range taskRowRE.FindAllStringSubmatch(body, -1) {
				out = append(out, m[1])
			}
			return out
		}
		r := b.get("/tasks")
		if got := rows(r.Body); got[0] != itoa64(ids[51]) {
			t.Fatalf("by number: first row %s, want %d", got[0], ids[51])
		}
		if !strings.Contains(r.Body, `data-testid="tasks-filter" data-autosubmit`) || !strings.Contains(r.Body, `data-testid="filter-apply"`) {
			t.Error("the task filter does not submit on change, or lost its button")
		}
		r = b.get("/tasks?sort=updated&role=developer&goal=%23" + itoa64(g.ID))
		got := rows(r.Body)
		if len(got) != 50 || got[0] != itoa64(ids[0]) || got[1] != itoa64(ids[51]) {
			t.Fatalf("by update: rows %v…, want %d then %d", got[:min(3, len(got))], ids[0], ids[51])
		}
		next := pageLinks(r.Body)["pagination-next"]
		for _, want := range []string{"sort=updated", "role=developer", "after=" + itoa64(ids[3])} {
			if !strings.Contains(next, want) {
				t.Errorf("Older link %q lacks %s", next, want)
			}
		}
		if got := rows(b.get(next).Body); !slices.Equal(got, []string{itoa64(ids[2]), itoa64(ids[1])}) {
			t.Errorf("by update, page 2: %v, want [%d %d]", got, ids[2], ids[1])
		}
		if !strings.Contains(r.Body, `<option value="updated" selected`) {
			t.Error("the sort select does not show the order")
		}

		r = b.get("/goals?sort=created")
		if !strings.Contains(r.Body, `data-testid="goals-filter" data-autosubmit`) || !strings.Contains(r.Body, `<option value="created" selected`) {
			t.Error("the goal list does not offer the order or submit on change")
		}
		if b.get("/tasks?sort=bogus").Status != 200 {
			t.Error("an unknown order is not ignored")
		}
	})
}
