package pages_test

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
)

// bulkGoals stores one goal per entry of states, oldest first, in one transaction,
// and returns their ids in that order.
func (e *env) bulkGoals(states []models.GoalState) []int64 {
	e.t.Helper()
	ids := make([]int64, 0, len(states))
	now := time.Now().UTC()
	err := e.svc.Store().InTx(e.ctx(), func(tx models.Tx) error {
		for i, s := range states {
			g := &models.Goal{Title: fmt.Sprintf("Bulk goal %d", i), State: s, CreatedAt: now, UpdatedAt: now}
			if err := tx.CreateGoal(e.ctx(), g); err != nil {
				return err
			}
			ids = append(ids, g.ID)
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return ids
}

var goalRowRE = regexp.MustCompile(`data-testid="goal-row-(\d+)"`)

// goalRows returns the ids of the goals listed on a goals page, in page order.
func goalRows(t *testing.T, body string) []int64 {
	t.Helper()
	var out []int64
	for _, m := range goalRowRE.FindAllStringSubmatch(body, -1) {
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

var hrefRE = regexp.MustCompile(`href="([^"]*)"[^>]*data-testid="(pagination-(?:next|first))"`)

// pageLinks returns the hrefs of the pagination links by test id, unescaped.
func pageLinks(body string) map[string]string {
	out := map[string]string{}
	for _, m := range hrefRE.FindAllStringSubmatch(body, -1) {
		out[m[2]] = strings.ReplaceAll(m[1], "&amp;", "&")
	}
	return out
}

// TestGoalsPaging: with 120 goals the list shows the 100 newest and an Older link;
// following it shows the remaining 20, a link back to the newest and no Older link.
// The state filter is kept in the links.
func TestGoalsPaging(t *testing.T) {
	t.Parallel()
	handlertest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		e := newEnv(t, dialect)
		e.team()
		ids := e.bulkGoals(slices.Repeat([]models.GoalState{models.GoalOpen}, 120))
		b := e.browser().login("lead")

		// want returns ids[hi-1] down to ids[lo]: newest first.
		want := func(lo, hi int) []int64 {
			var out []int64
			for i := hi - 1; i >= lo; i-- {
				out = append(out, ids[i])
			}
			return out
		}
		for _, c := range []struct{ path, state string }{{"/goals", ""}, {"/goals?state=open", "open"}} {
			r := b.get(c.path)
			if r.Status != 200 {
				t.Fatalf("GET %s: %d", c.path, r.Status)
			}
			if got := goalRows(t, r.Body); !slices.Equal(got, want(20, 120)) {
				t.Fatalf("GET %s: %d rows %v…, want the 100 newest", c.path, len(got), head(got))
			}
			links := pageLinks(r.Body)
			next := "/goals?after=" + itoa64(ids[20])
			if c.state != "" {
				next += "&state=" + c.state
			}
			if links["pagination-next"] != next || links["pagination-first"] != "" {
				t.Fatalf("GET %s: links %v, want Older %s and no Newest", c.path, links, next)
			}
			if !strings.Contains(r.Body, "Older →") {
				t.Errorf("GET %s: no Older label", c.path)
			}

			r = b.get(links["pagination-next"])
			if r.Status != 200 {
				t.Fatalf("GET %s: %d", next, r.Status)
			}
			if got := goalRows(t, r.Body); !slices.Equal(got, want(0, 20)) {
				t.Fatalf("GET %s: rows %v, want the 20 oldest", next, got)
			}
			links = pageLinks(r.Body)
			first := "/goals"
			if c.state != "" {
				first += "?state=" + c.state
			}
			if links["pagination-next"] != "" || links["pagination-first"] != first {
				t.Fatalf("GET %s: links %v, want Newest %s and no Older", next, links, first)
			}
		}
		// Another state's page is not cut, and a malformed cursor is the first page.
		if r := b.get("/goals?state=verified"); len(goalRows(t, r.Body)) != 0 || len(pageLinks(r.Body)) != 0 {
			t.Errorf("verified goals: rows or links %v", pageLinks(r.Body))
		}
		if r := b.get("/goals?after=x"); len(goalRows(t, r.Body)) != 100 || pageLinks(r.Body)["pagination-first"] != "" {
			t.Errorf("after=x: not the first page")
		}
	})
}

// TestOverviewGoalCounts: the overview counts every goal per state, past the 1,000
// newest the old list-and-count covered.
func TestOverviewGoalCounts(t *testing.T) {
	t.Parallel()
	handlertest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		e := newEnv(t, dialect)
		e.team()
		// The oldest are verified and active, so that the newest 1,000 are all open.
		var states []models.GoalState
		add := func(s models.GoalState, n int) {
			for range n {
				states = append(states, s)
			}
		}
		add(models.GoalVerified, 30)
		add(models.GoalActive, 5)
		add(models.GoalOpen, 1010)
		e.bulkGoals(states)
		b := e.browser().login("exec")
		r := b.get("/")
		if r.Status != 200 {
			t.Fatalf("GET /: %d", r.Status)
		}
		for s, n := range map[models.GoalState]int{models.GoalOpen: 1010, models.GoalActive: 5, models.GoalPendingVerify: 0, models.GoalVerified: 30} {
			tile := between(r.Body, `data-testid="goal-stat-`+string(s)+`"`, "</div>")
			got := between(tile, `<span class="stat-value">`, "</span>")
			if got != strconv.Itoa(n) {
				t.Errorf("overview goals %s = %q, want %d", s, got, n)
			}
		}
	})
}

func head(xs []int64) []int64 { return xs[:min(len(xs), 5)] }

// TestGoalsPagingFullLastPage: exactly one page of goals shows no Older link, which
// would lead to an empty page.
func TestGoalsPagingFullLastPage(t *testing.T) {
	t.Parallel()
	handlertest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		e := newEnv(t, dialect)
		e.team()
		e.bulkGoals(slices.Repeat([]models.GoalState{models.GoalOpen}, 100))
		r := e.browser().login("lead").get("/goals")
		if got := goalRows(t, r.Body); len(got) != 100 {
			t.Fatalf("%d rows, want all 100", len(got))
		}
		if links := pageLinks(r.Body); len(links) != 0 {
			t.Fatalf("links %v on the only page", links)
		}
	})
}

var taskRowRE = regexp.MustCompile(`data-testid="task-row-(\d+)"`)

// TestTasksPaging: the task list pages by 50, with an Older link only when there is
// more to see (50 tasks: none; 51: one, then a last page of one task).
func TestTasksPaging(t *testing.T) {
	t.Parallel()
	handlertest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		e := newEnv(t, dialect)
		e.team()
		var ids []int64
		add := func(n int) {
			for range n {
				tk, err := e.svc.Tasks.CreateTask(e.ctx(), models.System, models.TaskSpec{Title: "Task", Role: "developer"})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, tk.ID)
			}
		}
		b := e.browser().login("lead")
		add(50)
		r := b.get("/tasks")
		if rows := taskRowRE.FindAllStringSubmatch(r.Body, -1); len(rows) != 50 || len(pageLinks(r.Body)) != 0 {
			t.Fatalf("exactly one page: %d rows, links %v; want 50 rows and no link", len(rows), pageLinks(r.Body))
		}
		add(1)
		r = b.get("/tasks")
		rows := taskRowRE.FindAllStringSubmatch(r.Body, -1)
		links := pageLinks(r.Body)
		if len(rows) != 50 || links["pagination-next"] != "/tasks?after="+itoa64(ids[1]) {
			t.Fatalf("first page: %d rows, links %v; want 50 rows and Older after %d", len(rows), links, ids[1])
		}
		r = b.get(links["pagination-next"])
		rows = taskRowRE.FindAllStringSubmatch(r.Body, -1)
		if len(rows) != 1 || rows[0][1] != itoa64(ids[0]) || pageLinks(r.Body)["pagination-next"] != "" {
			t.Fatalf("last page: rows %v, links %v; want task %d alone and no Older link", rows, pageLinks(r.Body), ids[0])
		}
	})
}
