package contract

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestExpandedPaths: what diagnoses, briefs and the blocked payload show has
// {task_id} expanded.
func TestExpandedPaths(t *testing.T) {
	cp := Completion{Type: CompletionFile, Path: "out/{task_id}/report.md", Verify: []string{"test -f x"},
		Checklist: &Checklist{Path: "{task_id}/todo.md", Count: 2}}
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
	if got := (Completion{Type: CompletionSignal}).Expanded(7).Path; got != "7/signal.json" {
		t.Fatalf("default signal path %q", got)
	}
	if got := (Completion{Type: CompletionNone}).Expanded(7).Path; got != "" {
		t.Fatalf("type none path %q", got)
	}
	b, _ := json.Marshal(e)
	if strings.Contains(string(b), TaskIDPlaceholder) {
		t.Fatalf("still a placeholder: %s", b)
	}
	brief := RenderContract(Contract{Completion: cp}, 42)
	if strings.Contains(brief, TaskIDPlaceholder) || !strings.Contains(brief, "`out/42/report.md`") || !strings.Contains(brief, "`42/todo.md`") {
		t.Fatalf("brief:\n%s", brief)
	}
}

// TestRenderContractStacks: the brief says which stacks the workspace was recognised
// as, or that none was, and that a pending contract is completed before the attempt.
func TestRenderContractStacks(t *testing.T) {
	rules := DefaultRules()
	c := ResolveContract(Contract{}, "Fix the parser", "", nil, rules, genNow)
	if out := RenderContract(c, 3); !strings.Contains(out, "added before your first attempt") {
		t.Fatalf("pending:\n%s", out)
	}
	c.AddStackCriteria(rules, monoFacts)
	out := RenderContract(c, 3)
	for _, want := range []string{"recognised as: go, node", "1. **Unit tests** (unit-test) — Unit tests pass (go.mod found); checked with `go test ./...`",
		"2. **Vet** (vet)", "3. **Formatting** (format)", "**Unit tests** (unit-test) — Unit tests pass (package.json has a test script; pnpm-lock.yaml found); checked with `pnpm test`"} {
		if !strings.Contains(out, want) {
			t.Fatalf("brief lacks %q:\n%s", want, out)
		}
	}
	d := ResolveContract(Contract{}, "Fix the parser", "", nil, rules, genNow)
	d.AddStackCriteria(rules, docsFacts)
	if out := RenderContract(d, 3); !strings.Contains(out, "No language stack") || !strings.Contains(out, "No verification criteria beyond") {
		t.Fatalf("docs-only:\n%s", out)
	}
	if out := RenderContract(Contract{Verification: Verification{Type: VerifyAdvisory, Workspace: WorkspaceDetected}}, 3); strings.Contains(out, "recognised") {
		t.Fatalf("advisory:\n%s", out)
	}
}
