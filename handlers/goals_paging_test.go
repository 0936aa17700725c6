package handlers_test

import (
	"testing"

	"github.com/countersign/countersign/models"
)

// TestGoalsAPIPaging: GET /goals pages newest first with after=<id>, like tasks.
func TestGoalsAPIPaging(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("c", models.KindHuman, models.RoleLead)
		var ids []int64
		for _, title := range []string{"one", "two", "three"} {
			ids = append(ids, e.must(201, "c", "POST", "/goals", map[string]any{"title": title}).num("id"))
		}
		page := e.must(200, "c", "GET", "/goals?limit=2", nil).Body["goals"].([]any)
		if len(page) != 2 || goalID(page[0]) != ids[2] || goalID(page[1]) != ids[1] {
			t.Fatalf("first page = %v, want goals %d and %d", page, ids[2], ids[1])
		}
		rest := e.must(200, "c", "GET", "/goals?limit=2&after="+itoa(ids[1]), nil).Body["goals"].([]any)
		if len(rest) != 1 || goalID(rest[0]) != ids[0] {
			t.Fatalf("after %d = %v, want goal %d only", ids[1], rest, ids[0])
		}
		if r := e.do("c", "GET", "/goals?after=x", nil); r.Status != 422 || r.fields()["after"] == nil {
			t.Fatalf("after=x: %d %s, want 422 naming after", r.Status, r.Raw)
		}
	})
}

func goalID(v any) int64 {
	m, _ := v.(map[string]any)
	f, _ := m["id"].(float64)
	return int64(f)
}
