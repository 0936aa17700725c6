package handlers_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
)

// ledgerChain reads GET /ledger?<filter> and returns the entries' types in order and
// the entries themselves.
func (e *apiEnv) ledgerChain(filter string) ([]string, []map[string]any) {
	e.t.Helper()
	r := e.must(200, "lena", "GET", "/ledger?"+filter, nil)
	var types []string
	var entries []map[string]any
	for _, x := range r.Body["entries"].([]any) {
		m := x.(map[string]any)
		types = append(types, m["type"].(string))
		entries = append(entries, m)
	}
	return types, entries
}

// TestLedgerChainOfAReopenedTask: a verified task that a lead reopens gets a
// task.revoked naming the completion it withdraws and why; verified again, it gets a
// new task.complete, in that order on the ledger. Its goal's goal.verified is revoked
// the same way. Work a person did and a person verified says advisory: no runner
// checked it.
func TestLedgerChainOfAReopenedTask(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.team()
		g := e.must(201, "lena", "POST", "/goals", map[string]any{"title": "Login page"}).num("id")
		task := e.must(201, "lena", "POST", "/tasks", map[string]any{"title": "Form", "goal_id": g, "assignee": "bob", "approve": "any", "verify": "any"}).num("id")
		tid, gid := itoa(task), itoa(g)
		finish := func() {
			e.must(200, "bob", "POST", "/tasks/"+tid+"/submit", map[string]any{"summary": "form"})
			e.must(200, "rita", "POST", "/tasks/"+tid+"/approve", nil)
			e.must(200, "vic", "POST", "/tasks/"+tid+"/verify", map[string]any{"notes": "ok"})
		}
		e.must(200, "bob", "POST", "/tasks/"+tid+"/start", nil)
		finish()
		e.must(200, "lena", "POST", "/goals/"+gid+"/verify", map[string]any{"notes": "all good"})

		// A reopen without a reason is refused and writes nothing.
		before, _ := e.ledgerChain("task=" + tid)
		e.must(422, "lena", "POST", "/tasks/"+tid+"/reopen", map[string]any{"reason": " "})
		if after, _ := e.ledgerChain("task=" + tid); !slices.Equal(before, after) {
			t.Fatalf("a refused reopen changed the ledger: %v → %v", before, after)
		}
		e.must(200, "lena", "POST", "/tasks/"+tid+"/reopen", map[string]any{"reason": "regressed on mobile"})
		if s := e.goalState(g); s != "active" {
			t.Fatalf("goal of a reopened task is %s", s)
		}
		finish()

		types, entries := e.ledgerChain("task=" + tid)
		want := []string{models.LedgerTaskComplete, models.LedgerTaskRevoked, models.LedgerTaskComplete}
		if !slices.Equal(types, want) {
			t.Fatalf("chain of task %d: %v, want %v", task, types, want)
		}
		if got := int64(entries[1]["revokes_id"].(float64)); got != int64(entries[0]["id"].(float64)) {
			t.Fatalf("task.revoked revokes entry %d, not the completion %v", got, entries[0]["id"])
		}
		for _, i := range []int{0, 2} {
			if entries[i]["kind"] != models.KindAdvisory {
				t.Fatalf("a person's work verified by a person: kind %v", entries[i]["kind"])
			}
		}
		msg := e.must(200, "lena", "GET", "/ledger/"+itoa(int64(entries[1]["id"].(float64))), nil).Raw
		if !strings.Contains(string(msg), `"type":"task.revoked"`) || !strings.Contains(string(msg), `"by":"lena","why":"reopened"`) {
			t.Fatalf("task.revoked message: %s", msg)
		}
		payload := e.must(200, "lena", "GET", "/ledger/"+itoa(int64(entries[1]["id"].(float64)))+"/payload", nil).Raw
		if !strings.Contains(string(payload), "regressed on mobile") {
			t.Fatalf("task.revoked payload lacks the reason: %s", payload)
		}

		goalTypes, goalEntries := e.ledgerChain("goal=" + gid)
		var goalOnly []string
		var verifiedID, revokedOf float64
		for i, typ := range goalTypes {
			switch typ {
			case models.LedgerGoalVerified:
				verifiedID = goalEntries[i]["id"].(float64)
			case models.LedgerGoalRevoked:
				revokedOf = goalEntries[i]["revokes_id"].(float64)
			default:
				continue
			}
			goalOnly = append(goalOnly, typ)
		}
		if !slices.Equal(goalOnly, []string{models.LedgerGoalVerified, models.LedgerGoalRevoked}) || revokedOf != verifiedID {
			t.Fatalf("goal %d's entries: %v (revoked %v of %v)", g, goalTypes, revokedOf, verifiedID)
		}
		e.must(422, "lena", "GET", "/ledger?task=x", nil)
	})
}
