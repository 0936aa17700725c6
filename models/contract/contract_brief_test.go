package contract

import (
	"strings"
	"testing"
	"time"
)

func TestContractRenderFile(t *testing.T) {
	c := Contract{
		Completion: Completion{
			Type: CompletionFile, Path: "feature/{task_id}/output.md", MinLength: 100, DoneToken: "TASK_COMPLETE",
			Verify: []string{"go test ./...", "go vet ./..."}, VerifyTimeout: Duration{2 * time.Minute},
			Evaluate: "Must address every acceptance criterion.\nNo TODOs.", MaxAttempts: 3, Timeout: Duration{time.Hour},
			Clean: true, Checklist: &Checklist{Path: "{task_id}/todo.md", Count: 4},
		},
		Verification: Verification{Type: VerifyVerifiable, Criteria: []Criterion{
			{Activity: "unit-test", Description: "Toggle renders and handles click", Pattern: "DarkModeToggle", Command: "go test ./..."},
			{Activity: "e2e", Description: "Settings page toggle changes theme", Timing: TimingImmediate},
			{Activity: "perf", Description: "p99 under 50ms", Timing: TimingDeferred},
		}},
		Review: &Review{Role: "reviewer", MaxRounds: 2},
	}
	out := RenderContract(c, 42)
	for _, want := range []string{
		"`feature/42/output.md`", "at least 100 bytes", "print `TASK_COMPLETE`", "`go test ./...`", "`go vet ./...`",
		"at most 2m each", "`42/todo.md` must have at least 4 checked boxes", "no uncommitted changes",
		"> Must address every acceptance criterion.", "> No TODOs.",
		"1. **Unit tests** (unit-test) — Toggle renders and handles click; tests matching \"DarkModeToggle\"; checked with `go test ./...`",
		"2. **End-to-end tests** (e2e) — Settings page toggle changes theme; runs immediately",
		"3. **perf** (perf) — p99 under 50ms; runs later",
		"role reviewer", "at most 2 rounds", "Time limit: 1h per attempt", "3 attempts in all",
		NoProtocolMessages,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("brief lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "{") {
		t.Errorf("raw JSON or placeholder in a file brief:\n%s", out)
	}
}

func TestContractRenderSignalAndAdvisory(t *testing.T) {
	c := Contract{
		Completion:   Completion{Type: CompletionSignal, Signal: `appro"ved`},
		Verification: Verification{Type: VerifyAdvisory},
	}
	out := RenderContract(c, 7)
	for _, want := range []string{
		"`7/signal.json`", `{"signal":"appro\"ved","reasoning":"why you decided so"}`,
		"no automated checks; your output goes to a person", "Time limit: 30m", "2 attempts in all", NoProtocolMessages,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("brief lacks %q:\n%s", want, out)
		}
	}
}

func TestContractRenderNoneAndSkip(t *testing.T) {
	out := RenderContract(Contract{Completion: Completion{MaxAttempts: 1}, Verification: Verification{Type: VerifySkip}}, 1)
	for _, want := range []string{"No output file is checked", "Only minimal checks", "There is one attempt."} {
		if !strings.Contains(out, want) {
			t.Errorf("brief lacks %q:\n%s", want, out)
		}
	}
	out = RenderContract(Contract{Completion: Completion{Path: "x.md"}, Verification: Verification{Type: VerifySkip, Criteria: []Criterion{{Activity: "lint", Description: "No lint errors"}}}}, 1)
	for _, want := range []string{"`x.md`", "It must not be empty.", "Only minimal checks apply to this task. Your work will be verified by:", "1. **Lint** (lint) — No lint errors\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("brief lacks %q:\n%s", want, out)
		}
	}
	out = RenderContract(Contract{Review: &Review{Role: "qa"}}, 1)
	if !strings.Contains(out, "No verification criteria beyond") || !strings.Contains(out, "at most 3 rounds") {
		t.Errorf("brief:\n%s", out)
	}
}
