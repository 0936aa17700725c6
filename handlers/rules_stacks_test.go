package handlers_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// TestRulesAPIStacks: GET and PUT /rules carry the stacks (detection, commands,
// protected paths, results), validated field by field; a task created through the API
// with an auto contract waits for its workspace, and an explicit skip gets no command.
func TestRulesAPIStacks(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("eddie", models.KindHuman, "editor")
		e.agent("lena", models.KindHuman, "lead")

		got := e.must(200, "eddie", "GET", "/rules", nil)
		var r models.ProjectRules
		if err := json.Unmarshal(got.Raw, &r); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(r.Stacks, contract.DefaultStacks()) {
			t.Fatalf("default stacks over the API: %s", got.Raw)
		}

		r.Stacks = append(r.Stacks, contract.Stack{Name: "elixir", Detect: []contract.Condition{{File: "mix.exs"}},
			Commands: []contract.StackCommand{{Activity: "unit-test", Command: "mix test", Tools: []string{"mix"}}},
			Protect:  []string{"test/**"}, Results: []contract.TestResults{{Format: contract.ResultsJUnitXML, Command: "mix test --formatter JUnitFormatter"}}})
		e.must(200, "eddie", "PUT", "/rules", r)
		var back models.ProjectRules
		if err := json.Unmarshal(e.must(200, "lena", "GET", "/rules", nil).Raw, &back); err != nil {
			t.Fatal(err)
		}
		if n := len(back.Stacks); n != len(r.Stacks) || back.Stacks[n-1].Name != "elixir" || back.Stacks[n-1].Results[0].Format != contract.ResultsJUnitXML {
			t.Fatalf("saved stacks %+v", back.Stacks)
		}

		bad := r
		bad.Stacks = append([]contract.Stack(nil), r.Stacks...)
		bad.Stacks[0].Commands = append([]contract.StackCommand(nil), r.Stacks[0].Commands...)
		bad.Stacks[0].Commands[0].Command = "  "
		bad.Stacks[1].Detect = []contract.Condition{{File: "package.json", Script: "test"}}
		res := e.must(422, "eddie", "PUT", "/rules", bad)
		f := res.fields()
		if f["stacks[0].commands[0].command"] == nil || f["stacks[1].detect[0]"] == nil {
			t.Fatalf("fields %v", f)
		}
		res = e.must(422, "eddie", "PUT", "/rules", strings.Replace(string(e.must(200, "eddie", "GET", "/rules", nil).Raw), `"detect"`, `"detcet"`, 1))
		if res.fields()["detcet"] == nil {
			t.Fatalf("unknown stack field: %s", res.Raw)
		}

		// Task creation: auto waits for the workspace, explicit skip has nothing.
		task := e.must(201, "lena", "POST", "/tasks", map[string]any{"title": "Fix the crash in the parser"})
		v := task.Body["contract"].(map[string]any)["verification"].(map[string]any)
		if v["type"] != "verifiable" || v["workspace"] != contract.WorkspacePending || v["criteria"] != nil {
			t.Fatalf("auto task %v", v)
		}
		skip := e.must(201, "lena", "POST", "/tasks", map[string]any{"title": "Fix the crash in the parser",
			"contract": map[string]any{"verification": map[string]any{"type": "skip"}}})
		v = skip.Body["contract"].(map[string]any)["verification"].(map[string]any)
		if v["type"] != "skip" || v["workspace"] != nil || v["criteria"] != nil {
			t.Fatalf("explicit skip %v", v)
		}
	})
}
