package handlers_test

import (
	"testing"

	"github.com/countersign/countersign/models"
)

// TestAdvisoryPromptAPI: with prompt_for_advisory on (PUT /rules), an advisory task
// waits with an advisory_prompt inbox item; starting it is 409 advisory_prompt; a
// developer answering is 403 lead_or_exec; bad criteria are 422 with field errors and
// change nothing; the exec makes it verifiable and it starts; proceed and cancel
// resolve the others; a task with no prompt waiting is 409 advisory_prompt.
func TestAdvisoryPromptAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.team()
		rules := e.must(200, "lena", "GET", "/rules", nil).Body
		rules["prompt_for_advisory"] = true
		e.must(200, "lena", "PUT", "/rules", rules)

		mk := func(title string) string {
			return itoa(e.must(201, "lena", "POST", "/tasks", map[string]any{"title": title, "role": "developer", "assignee": "bob"}).num("id"))
		}
		a, b, c := mk("Investigate why checkout is slow"), mk("Research onboarding flows"), mk("Explore caching options")
		inbox := e.must(200, "eve", "GET", "/inbox?kind=advisory_prompt", nil).Body
		if items, _ := inbox["items"].([]any); len(items) != 3 {
			t.Fatalf("inbox %v", inbox)
		}
		r := e.must(409, "bob", "POST", "/tasks/"+a+"/start", nil)
		if r.errRule() != models.RuleAdvisoryPrompt {
			t.Fatalf("start of a held task: %s", r.Raw)
		}
		r = e.must(403, "bob", "POST", "/tasks/"+a+"/advisory", map[string]any{"action": "proceed"})
		if r.errRule() != "lead_or_exec" {
			t.Fatalf("developer answering: %s", r.Raw)
		}
		r = e.must(422, "eve", "POST", "/tasks/"+a+"/advisory", map[string]any{"action": "make_verifiable",
			"criteria": []map[string]any{{"activity": "", "description": "tests pass"}}})
		if len(r.fields()) == 0 {
			t.Fatalf("bad criteria without field errors: %s", r.Raw)
		}
		if typ := e.must(200, "lena", "GET", "/tasks/"+a, nil).Body["task"].(map[string]any)["contract"].(map[string]any)["verification"].(map[string]any)["type"]; typ != "advisory" {
			t.Fatalf("a refused make_verifiable changed the contract to %v", typ)
		}
		r = e.must(403, "eve", "POST", "/tasks/"+a+"/advisory", map[string]any{"action": "make_verifiable",
			"criteria": []map[string]any{{"activity": "unit-test", "description": "tests pass", "command": "go test ./..."}}})
		if r.errRule() != models.RuleCommandsNeedEditor {
			t.Fatalf("exec writing shell: %s", r.Raw)
		}
		r = e.must(200, "eve", "POST", "/tasks/"+a+"/advisory", map[string]any{"action": "make_verifiable",
			"criteria": []map[string]any{{"activity": "unit-test", "description": "a test shows checkout under 200 ms"}}})
		v := r.Body["contract"].(map[string]any)["verification"].(map[string]any)
		if v["type"] != "verifiable" || len(v["criteria"].([]any)) != 1 {
			t.Fatalf("made verifiable: %v", v)
		}
		e.must(200, "bob", "POST", "/tasks/"+a+"/start", nil)
		r = e.must(409, "lena", "POST", "/tasks/"+a+"/advisory", map[string]any{"action": "proceed"})
		if r.errRule() != models.RuleAdvisoryPrompt {
			t.Fatalf("answering twice: %s", r.Raw)
		}
		e.must(200, "lena", "POST", "/tasks/"+b+"/advisory", map[string]any{"action": "proceed", "reason": "a report is what we want"})
		e.must(200, "bob", "POST", "/tasks/"+b+"/start", nil)
		if s := e.must(200, "eve", "POST", "/tasks/"+c+"/advisory", map[string]any{"action": "cancel"}).str("state"); s != "cancelled" {
			t.Fatalf("cancel: %s", s)
		}
		e.must(422, "eve", "POST", "/tasks/"+c+"/advisory", map[string]any{"action": "later"})
		if items, _ := e.must(200, "eve", "GET", "/inbox?kind=advisory_prompt", nil).Body["items"].([]any); len(items) != 0 {
			t.Fatalf("prompts left open: %v", items)
		}
	})
}
