package mcp_test

import (
	"testing"

	"github.com/countersign/countersign/models/contract"
)

// TestReviewOnExhaustedMCP: through MCP, as through the API, a contract whose review
// names an unknown on_exhausted is refused with rule review_on_exhausted and nothing
// is written; proceed_with_warnings is accepted and kept with the task.
func TestReviewOnExhaustedMCP(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.threeAgents()
		contractArg := func(onExhausted string) map[string]any {
			return map[string]any{"completion": map[string]any{"type": "none"}, "verification": map[string]any{"type": "skip"},
				"review": map[string]any{"role": "reviewer", "on_exhausted": onExhausted}}
		}
		e.refused("c", "create_task", map[string]any{"title": "Reviewed", "contract": contractArg("retry_forever")},
			contract.RuleReviewOnExhausted, "on_exhausted")
		created := e.ok("c", "create_task", map[string]any{"title": "Reviewed", "contract": contractArg(contract.OnExhaustedProceed)})
		task, err := e.db.GetTask(t.Context(), created.id())
		if err != nil {
			t.Fatal(err)
		}
		if rv := task.Contract.Review; rv == nil || rv.OnExhausted != contract.OnExhaustedProceed {
			t.Fatalf("stored review %+v", task.Contract.Review)
		}
	})
}
