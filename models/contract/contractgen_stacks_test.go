package contract

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

var (
	goFacts   = WorkspaceFacts{Files: []string{"go.mod", "main.go"}}
	monoFacts = WorkspaceFacts{Files: []string{"go.mod", "package.json", "pnpm-lock.yaml"}, Scripts: []string{"lint", "test"}}
	docsFacts = WorkspaceFacts{Files: []string{"README.md", "docs/"}}
)

// TestAddStackCriteria: which contracts the workspace completes, and how.
// checkStackCriteriaLeftAlone checks that AddStackCriteria adds nothing to a contract
// that does not wait for the workspace: explicit skip, auto skip, advisory, verify
// commands, explicit criteria with commands, rules without stacks.
func checkStackCriteriaLeftAlone(t *testing.T, rules Rules) {
	t.Helper()
	for _, tc := range []struct {
		name  string
		c     Contract
		title string
		rules Rules
	}{
		{"explicit skip", Contract{Verification: Verification{Type: VerifySkip}}, "Fix the parser", rules},
		{"auto skip", Contract{}, "Update the README", rules},
		{"explicit advisory", Contract{Verification: Verification{Type: VerifyAdvisory}}, "Fix the parser", rules},
		{"auto advisory", Contract{}, "Investigate the slow parser", rules},
		{"verify commands", Contract{Completion: Completion{Verify: []string{"./check.sh"}}}, "Fix the parser", rules},
		{"explicit criteria", Contract{Verification: Verification{Type: VerifyVerifiable, Criteria: []Criterion{{Activity: "unit-test", Description: "d", Command: "./t.sh"}}}}, "Fix it", rules},
		{"rules without stacks", Contract{}, "Fix the parser", textRules()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ResolveContract(tc.c, tc.title, "", nil, tc.rules, genNow)
			if c.Verification.Workspace != "" {
				t.Fatalf("waits for the workspace: %+v", c.Verification)
			}
			before := c
			if c.AddStackCriteria(tc.rules, monoFacts) || !reflect.DeepEqual(before, c) {
				t.Fatalf("changed: %+v", c.Verification)
			}
			if tc.name == "explicit skip" && len(c.Verification.Criteria) != 0 {
				t.Fatalf("explicit skip has criteria %+v", c.Verification.Criteria)
			}
		})
	}
}

func TestAddStackCriteria(t *testing.T) {
	rules := DefaultRules()
	resolve := func(c Contract, title string) Contract {
		return ResolveContract(c, title, "", nil, rules, genNow)
	}

	// Auto, classified verifiable: text criteria now, stack criteria from the workspace.
	c := resolve(Contract{}, "Fix the parser crash in README.md and parser.go")
	if c.Verification.Type != VerifyVerifiable || c.Verification.Workspace != WorkspacePending || len(c.Verification.Criteria) != 1 || c.Verification.Criteria[0].Activity != "docs" {
		t.Fatalf("resolved %+v", c.Verification)
	}
	created := c
	if !c.AddStackCriteria(rules, goFacts) {
		t.Fatal("a pending contract was not completed")
	}
	v := c.Verification
	acts := []string{}
	for _, cr := range v.Criteria {
		acts = append(acts, cr.Stack+"/"+cr.Activity)
	}
	if v.Workspace != WorkspaceDetected || !slices.Equal(v.Stacks, []string{"go"}) || !slices.Equal(acts, []string{"/docs", "go/unit-test", "go/vet", "go/format"}) {
		t.Fatalf("completed %+v", v)
	}
	if !slices.Equal(v.Criteria[1].Tools, []string{"go"}) || v.Criteria[1].Description != "Unit tests pass (go.mod found)" {
		t.Fatalf("criterion %+v", v.Criteria[1])
	}
	if created.Verification.Workspace != WorkspacePending || len(created.Verification.Criteria) != 1 {
		t.Fatal("AddStackCriteria changed a copy's criteria")
	}
	// Idempotent: completed once, whatever the workspace says later.
	again := c
	if again.AddStackCriteria(rules, monoFacts) || !reflect.DeepEqual(again, c) {
		t.Fatalf("completed twice: %+v", again.Verification)
	}
	// The hash moves with the criteria, not with the time.
	if created.Hash() == c.Hash() {
		t.Fatal("completing the contract kept its hash")
	}

	// A docs-only workspace: no commands, and it says so.
	d := resolve(Contract{}, "Fix the parser crash")
	if !d.AddStackCriteria(rules, docsFacts) || d.Verification.Workspace != WorkspaceDetected || len(d.Verification.Stacks) != 0 || len(d.Verification.Criteria) != 0 {
		t.Fatalf("docs-only %+v", d.Verification)
	}

	checkStackCriteriaLeftAlone(t, rules)

	// Criteria named only by an activity get the command of every matched stack that
	// has one; nothing else is added.
	named := Contract{Verification: Verification{Type: VerifyVerifiable, Criteria: []Criterion{
		{Activity: "unit-test", Description: "Toggle tests pass", Pattern: "Toggle"},
		{Activity: "docs", Description: "No conflict markers"},
		{Activity: "fuzz", Description: "Fuzzing finds nothing"},
	}}}
	n := resolve(named, "Add a toggle")
	if n.Verification.Workspace != WorkspacePendingCommands {
		t.Fatalf("named %+v", n.Verification)
	}
	n.AddStackCriteria(rules, monoFacts)
	var got []string
	for _, cr := range n.Verification.Criteria {
		got = append(got, cr.Stack+"|"+cr.Activity+"|"+cr.Command+"|"+cr.Pattern+"|"+cr.Description)
	}
	want := []string{
		"go|unit-test|go test ./...|Toggle|Toggle tests pass (go.mod found)",
		"node|unit-test|pnpm test|Toggle|Toggle tests pass (package.json has a test script; pnpm-lock.yaml found)",
		"|docs||" + "|No conflict markers",
		"|fuzz|||Fuzzing finds nothing",
	}
	if !slices.Equal(got, want) || !slices.Equal(n.Verification.Stacks, []string{"go", "node"}) {
		t.Fatalf("got  %q\nwant %q\n%+v", got, want, n.Verification)
	}

	// A caller cannot pre-empt the workspace: what it sends in workspace and stacks is
	// recomputed.
	forged := resolve(Contract{Verification: Verification{Type: VerifyAuto, Workspace: WorkspaceDetected, Stacks: []string{"rust"}}}, "Fix the parser")
	if forged.Verification.Workspace != WorkspacePending || forged.Verification.Stacks != nil {
		t.Fatalf("forged %+v", forged.Verification)
	}
}

// TestGenerateForWorkspaceRecordsTheWhy: custom rules with every kind of condition.
func TestGenerateForWorkspaceConditions(t *testing.T) {
	rules := DefaultRules()
	rules.Stacks = []Stack{{
		Name:   "elixir",
		Detect: []Condition{{File: "*.exs"}, {File: "lib/"}},
		Commands: []StackCommand{
			{Activity: "unit-test", Command: "mix test", When: []Condition{{Tool: "mix"}}},
			{Activity: "unit-test", Command: "docker run elixir mix test"},
			{Activity: "lint", Command: "mix credo", When: []Condition{{Target: "credo"}}},
		},
	}}
	if err := rules.Validate(); err != nil {
		t.Fatal(err)
	}
	facts := WorkspaceFacts{Files: []string{"mix.exs", "lib"}, Tools: []string{"mix"}, Targets: []string{"credo"}}
	v := GenerateForWorkspace("Add retries", "", nil, rules, facts, genNow)
	if got := stackCommands(v); !slices.Equal(got, []string{"elixir: mix test | Unit tests pass (mix on PATH)", "elixir: mix credo | No lint or formatting errors (Makefile has a credo target)"}) {
		t.Fatalf("%q", got)
	}
	// lib is a file here, not a directory: only the glob detects; without mix, the
	// general variant.
	facts = WorkspaceFacts{Files: []string{"mix.exs"}}
	if got := stackCommands(GenerateForWorkspace("Add retries", "", nil, rules, facts, genNow)); !slices.Equal(got, []string{"elixir: docker run elixir mix test | Unit tests pass (mix.exs found)"}) {
		t.Fatalf("%q", got)
	}
	if v := GenerateForWorkspace("Add retries", "", nil, rules, WorkspaceFacts{Files: []string{"lib"}}, genNow); len(v.Stacks) != 0 {
		t.Fatalf("a file named lib matched a directory condition: %+v", v)
	}
	if v := GenerateForWorkspace("Add retries", "", nil, rules, WorkspaceFacts{Files: []string{"lib/"}}, genNow); !slices.Equal(v.Stacks, []string{"elixir"}) {
		t.Fatalf("the directory lib/ did not match: %+v", v)
	}
	if r := rules.Tools(); !slices.Equal(r, []string{"mix"}) {
		t.Fatalf("tools %q", r)
	}
	if r := DefaultRules().Tools(); !slices.Equal(r, []string{"cargo", "go", "gofmt", "make", "mypy", "npm", "pnpm", "python3", "ruff", "yarn"}) {
		t.Fatalf("default tools %q", r)
	}
}

func TestRulesValidateStacks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(r *Rules)
		field string
	}{
		{"no activities and no stacks", func(r *Rules) { r.Activities, r.FilePatterns, r.Stacks = nil, nil, nil }, "activities"},
		{"bad name", func(r *Rules) { r.Stacks[0].Name = "Go Lang" }, "stacks[0].name"},
		{"twice", func(r *Rules) { r.Stacks[1].Name = "go" }, "stacks[1].name"},
		{"no detection", func(r *Rules) { r.Stacks[0].Detect = nil }, "stacks[0].detect"},
		{"two fields in a condition", func(r *Rules) { r.Stacks[0].Detect[0].Script = "test" }, "stacks[0].detect[0]"},
		{"empty condition", func(r *Rules) {
			r.Stacks[1].Commands[0].When = append(r.Stacks[1].Commands[0].When, Condition{})
		}, "stacks[1].commands[0].when[2]"},
		{"file with a path", func(r *Rules) { r.Stacks[0].Detect[0].File = "sub/go.mod" }, "stacks[0].detect[0].file"},
		{"bad file glob", func(r *Rules) { r.Stacks[0].Detect[0].File = "[go" }, "stacks[0].detect[0].file"},
		{"bad script", func(r *Rules) { r.Stacks[1].Detect[0].Script = "te st" }, "stacks[1].detect[0].script"},
		{"bad target", func(r *Rules) { r.Stacks[4].Detect[0].Target = "$(X)" }, "stacks[4].detect[0].target"},
		{"unknown config", func(r *Rules) { r.Stacks[2].Detect[0].Config = "nose" }, "stacks[2].detect[0].config"},
		{"tool path", func(r *Rules) {
			r.Stacks[0].Detect = append(r.Stacks[0].Detect, Condition{Tool: "/usr/bin/go"})
		}, "stacks[0].detect[1].tool"},
		{"no commands", func(r *Rules) { r.Stacks[3].Commands = nil }, "stacks[3].commands"},
		{"bad activity", func(r *Rules) { r.Stacks[0].Commands[1].Activity = "Vet!" }, "stacks[0].commands[1].activity"},
		{"empty command", func(r *Rules) { r.Stacks[0].Commands[0].Command = " " }, "stacks[0].commands[0].command"},
		{"NUL command", func(r *Rules) { r.Stacks[0].Commands[0].Command = "go\x00" }, "stacks[0].commands[0].command"},
		{"long description", func(r *Rules) { r.Stacks[0].Commands[0].Description = strings.Repeat("d", 201) }, "stacks[0].commands[0].description"},
		{"bad tool", func(r *Rules) { r.Stacks[0].Commands[0].Tools = []string{"go", "../go"} }, "stacks[0].commands[0].tools[1]"},
		{"absolute protect", func(r *Rules) { r.Stacks[0].Protect[1] = "/etc/**" }, "stacks[0].protect[1]"},
		{"climbing protect", func(r *Rules) { r.Stacks[3].Protect[0] = "../tests/**" }, "stacks[3].protect[0]"},
		{"bad protect glob", func(r *Rules) { r.Stacks[2].Protect[0] = "tests/[x" }, "stacks[2].protect[0]"},
		{"unknown results format", func(r *Rules) { r.Stacks[0].Results[0].Format = "xunit" }, "stacks[0].results[0].format"},
		{"empty results command", func(r *Rules) { r.Stacks[3].Results[0].Command = "" }, "stacks[3].results[0].command"},
		{"bad results condition", func(r *Rules) { r.Stacks[1].Results[0].When[0] = Condition{} }, "stacks[1].results[0].when[0]"},
		{"pattern names an activity nobody defines", func(r *Rules) { r.FilePatterns[0].Activities = []string{"vet", "nosuch"} }, "file_patterns[0].activities[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := DefaultRules()
			tc.edit(&r)
			f := fieldsOf(t, r.Validate())
			if f[tc.field] == "" {
				t.Fatalf("want %s, got %v", tc.field, f)
			}
		})
	}
	// An activity only a stack defines is known to file patterns and Always.
	r := DefaultRules()
	r.FilePatterns = append(r.FilePatterns, FilePatternRule{Pattern: "*.py", Activities: []string{"unit-test"}})
	r.Always = []string{"format"}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestRulesStacksRoundTrip: stacks read and write as JSON (the API) and YAML (the
// rules page and the audit diff) without loss.
func TestRulesStacksRoundTrip(t *testing.T) {
	def := DefaultRules()
	b, err := json.Marshal(def)
	if err != nil {
		t.Fatal(err)
	}
	var back Rules
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.Stacks, def.Stacks) {
		t.Fatalf("JSON: %v\n%s", err, b)
	}
	y, err := yaml.Marshal(def.Stacks)
	if err != nil {
		t.Fatal(err)
	}
	var ys []Stack
	if err := yaml.Unmarshal(y, &ys); err != nil || !reflect.DeepEqual(ys, def.Stacks) {
		t.Fatalf("YAML: %v\n%s", err, y)
	}
	if !strings.Contains(string(y), "- file: go.mod") || !strings.Contains(string(b), `"detect":[{"script":"test"}]`) {
		t.Fatalf("unexpected shape:\n%s\n%s", y, b)
	}
}
