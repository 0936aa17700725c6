package models

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/models/contract"
	"gopkg.in/yaml.v3"
)

// TestMaxAttemptsBelowOne: a budget given below 1 (0 included) is a field error; one
// left out is the default.
func TestMaxAttemptsBelowOne(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		json     bool
		want     int // 0: refused
	}{
		{"json 0", `{"max_attempts":0}`, true, 0},
		{"yaml 0", "max_attempts: 0", false, 0},
		{"json max_iterations 0", `{"max_iterations":0}`, true, 0},
		{"yaml max_iterations 0", "max_iterations: 0", false, 0},
		{"json -1", `{"max_attempts":-1}`, true, 0},
		{"yaml -3", "max_attempts: -3", false, 0},
		{"json left out", `{"type":"none"}`, true, contract.DefaultMaxAttempts},
		{"yaml left out", "type: none", false, contract.DefaultMaxAttempts},
		{"json null", `{"max_attempts":null}`, true, contract.DefaultMaxAttempts},
		{"json 1", `{"max_attempts":1}`, true, 1},
		{"yaml 7", "max_attempts: 7", false, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cp contract.Completion
			var err error
			if tc.json {
				err = json.Unmarshal([]byte(tc.in), &cp)
			} else {
				err = yaml.Unmarshal([]byte(tc.in), &cp)
			}
			if err != nil {
				t.Fatal(err)
			}
			c := contract.Contract{Completion: cp}
			c.Normalize()
			f := fieldsOf(t, c.Validate())
			if tc.want == 0 {
				if !strings.Contains(f["completion.max_attempts"], "must be at least 1") {
					t.Fatalf("want a field error, got %v (max_attempts %d)", f, c.Completion.MaxAttempts)
				}
				return
			}
			if len(f) != 0 || c.Completion.MaxAttempts != tc.want {
				t.Fatalf("max_attempts %d, errors %v", c.Completion.MaxAttempts, f)
			}
		})
	}

	// Through a task: the field is named under contract, and nothing is built.
	var spec TaskSpec
	if err := json.Unmarshal([]byte(`{"title":"x","contract":{"completion":{"max_attempts":0}}}`), &spec); err != nil {
		t.Fatal(err)
	}
	if _, err := spec.build(DefaultRules(), genNow); ErrorCode(err) != EINVALID || fieldsOf(t, err)["contract.completion.max_attempts"] == "" {
		t.Fatalf("task with max_attempts 0: %v", err)
	}
	// Through a template and a task file (YAML).
	tpl, err := ParseTemplate([]byte("name: x\nsteps:\n  - role: developer\n    brief: b\n    completion: {max_attempts: 0}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := tpl.Validate(); fieldsOf(t, err)["steps[0].completion.max_attempts"] == "" {
		t.Fatalf("template with max_attempts 0: %v", err)
	}
	task, err := ParseTaskMarkdown([]byte("---\ntitle: x\ncompletion:\n  max_iterations: 0\n---\nbody\n"))
	if err != nil {
		t.Fatal(err)
	}
	task.Contract.Normalize()
	if err := task.Validate(); fieldsOf(t, err)["contract.completion.max_attempts"] == "" {
		t.Fatalf("task file with max_iterations 0: %v", err)
	}
	// A contract built in code with a zero budget still means the default.
	c := contract.Contract{}
	c.Normalize()
	if c.Completion.MaxAttempts != contract.DefaultMaxAttempts || c.Validate() != nil {
		t.Fatalf("%+v", c.Completion)
	}
}

// TestExpandedPaths: what diagnoses, briefs and the blocked payload show has
// {task_id} expanded.
func TestExpandedPaths(t *testing.T) {
	cp := contract.Completion{Type: contract.CompletionFile, Path: "out/{task_id}/report.md", Verify: []string{"test -f x"},
		Checklist: &contract.Checklist{Path: "{task_id}/todo.md", Count: 2}}
	e := cp.Expanded(42)
	if e.Path != "out/42/report.md" || e.Checklist.Path != "42/todo.md" || e.Checklist.Count != 2 {
		t.Fatalf("%+v %+v", e, e.Checklist)
	}
	if cp.Path != "out/{task_id}/report.md" || cp.Checklist.Path != "{task_id}/todo.md" {
		t.Fatal("Expanded changed its receiver")
	}
	e.Verify[0] = "changed"
	if cp.Verify[0] != "test -f x" {
		t.Fatal("Expanded shares the verify commands")
	}
	if got := (contract.Completion{Type: contract.CompletionSignal}).Expanded(7).Path; got != "7/signal.json" {
		t.Fatalf("default signal path %q", got)
	}
	if got := (contract.Completion{Type: contract.CompletionNone}).Expanded(7).Path; got != "" {
		t.Fatalf("type none path %q", got)
	}
	b, _ := json.Marshal(e)
	if strings.Contains(string(b), contract.TaskIDPlaceholder) {
		t.Fatalf("still a placeholder: %s", b)
	}
	brief := contract.RenderContract(contract.Contract{Completion: cp}, 42)
	if strings.Contains(brief, contract.TaskIDPlaceholder) || !strings.Contains(brief, "`out/42/report.md`") || !strings.Contains(brief, "`42/todo.md`") {
		t.Fatalf("brief:\n%s", brief)
	}
}

// TestRenderContractStacks: the brief says which stacks the workspace was recognised
// as, or that none was, and that a pending contract is completed before the attempt.
func TestRenderContractStacks(t *testing.T) {
	rules := DefaultRules()
	c := contract.ResolveContract(contract.Contract{}, "Fix the parser", "", nil, rules, genNow)
	if out := contract.RenderContract(c, 3); !strings.Contains(out, "added before your first attempt") {
		t.Fatalf("pending:\n%s", out)
	}
	c.AddStackCriteria(rules, monoFacts)
	out := contract.RenderContract(c, 3)
	for _, want := range []string{"recognised as: go, node", "1. **Unit tests** (unit-test) — Unit tests pass (go.mod found); checked with `go test ./...`",
		"2. **Vet** (vet)", "3. **Formatting** (format)", "**Unit tests** (unit-test) — Unit tests pass (package.json has a test script; pnpm-lock.yaml found); checked with `pnpm test`"} {
		if !strings.Contains(out, want) {
			t.Fatalf("brief lacks %q:\n%s", want, out)
		}
	}
	d := contract.ResolveContract(contract.Contract{}, "Fix the parser", "", nil, rules, genNow)
	d.AddStackCriteria(rules, docsFacts)
	if out := contract.RenderContract(d, 3); !strings.Contains(out, "No language stack") || !strings.Contains(out, "No verification criteria beyond") {
		t.Fatalf("docs-only:\n%s", out)
	}
	if out := contract.RenderContract(contract.Contract{Verification: contract.Verification{Type: contract.VerifyAdvisory, Workspace: contract.WorkspaceDetected}}, 3); strings.Contains(out, "recognised") {
		t.Fatalf("advisory:\n%s", out)
	}
}
