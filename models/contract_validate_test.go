package models

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models/contract"
)

func fieldsOf(t *testing.T, err error) map[string]string {
	t.Helper()
	if err == nil {
		return nil
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("not a *models.Error: %v", err)
	}
	return e.Fields
}

func TestContractValidate(t *testing.T) {
	h := func(d time.Duration) contract.Duration { return contract.Duration{d} }
	ok := func(c contract.Contract) contract.Contract { return c }
	for _, tc := range []struct {
		name  string
		c     contract.Contract
		field string // "" means valid
	}{
		{"zero contract", contract.Contract{}, ""},
		{"file with path", ok(contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, Path: "out/{task_id}.md", MinLength: 10}}), ""},
		{"signal", contract.Contract{Completion: contract.Completion{Type: contract.CompletionSignal, Signal: "approved", Path: "s.json"}}, ""},
		{"none with verify", contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone, Verify: []string{"go test ./..."}}}, ""},
		{"unknown completion type", contract.Contract{Completion: contract.Completion{Type: "mail"}}, "completion.type"},
		{"absolute path", contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, Path: "/etc/passwd"}}, "completion.path"},
		{"home path", contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, Path: "~/x"}}, "completion.path"},
		{"drive path", contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, Path: "C:/x"}}, "completion.path"},
		{"dotdot path", contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, Path: "a/../../b"}}, "completion.path"},
		{"bare dotdot", contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, Path: ".."}}, "completion.path"},
		{"dotdot inside is fine", contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, Path: "a/../b.md"}}, ""},
		{"backslash", contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, Path: `a\b.md`}}, "completion.path"},
		{"NUL", contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, Path: "a\x00b"}}, "completion.path"},
		{"invalid utf8", contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, Path: "a\xffb"}}, "completion.path"},
		{"workspace itself", contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, Path: "./"}}, "completion.path"},
		{"long path", contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, Path: strings.Repeat("a", 2000)}}, "completion.path"},
		{"path with none", contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone, Path: "x.md"}}, "completion.path"},
		{"negative min_length", contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, MinLength: -1}}, "completion.min_length"},
		{"min_length on none", contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone, MinLength: 5}}, "completion.min_length"},
		{"negative max_attempts", contract.Contract{Completion: contract.Completion{MaxAttempts: -1}}, "completion.max_attempts"},
		{"max_attempts 21", contract.Contract{Completion: contract.Completion{MaxAttempts: 21}}, "completion.max_attempts"},
		{"max_attempts 20", contract.Contract{Completion: contract.Completion{MaxAttempts: 20}}, ""},
		{"negative timeout", contract.Contract{Completion: contract.Completion{Timeout: h(-time.Second)}}, "completion.timeout"},
		{"timeout over a day", contract.Contract{Completion: contract.Completion{Timeout: h(25 * time.Hour)}}, "completion.timeout"},
		{"timeout a day", contract.Contract{Completion: contract.Completion{Timeout: h(24 * time.Hour)}}, ""},
		{"negative verify_timeout", contract.Contract{Completion: contract.Completion{VerifyTimeout: h(-1)}}, "completion.verify_timeout"},
		{"verify_timeout over a day", contract.Contract{Completion: contract.Completion{VerifyTimeout: h(48 * time.Hour)}}, "completion.verify_timeout"},
		{"negative cooldown", contract.Contract{Completion: contract.Completion{Cooldown: h(-1)}}, "completion.cooldown"},
		{"cooldown over a day", contract.Contract{Completion: contract.Completion{Cooldown: h(25 * time.Hour)}}, "completion.cooldown"},
		{"empty verify", contract.Contract{Completion: contract.Completion{Verify: []string{"ok", ""}}}, "completion.verify[1]"},
		{"blank verify", contract.Contract{Completion: contract.Completion{Verify: []string{" \t"}}}, "completion.verify[0]"},
		{"NUL verify", contract.Contract{Completion: contract.Completion{Verify: []string{"a\x00"}}}, "completion.verify[0]"},
		{"long verify", contract.Contract{Completion: contract.Completion{Verify: []string{strings.Repeat("x", 5000)}}}, "completion.verify[0]"},
		{"too many verify", contract.Contract{Completion: contract.Completion{Verify: make21("true")}}, "completion.verify"},
		{"signal without signal", contract.Contract{Completion: contract.Completion{Type: contract.CompletionSignal}}, "completion.signal"},
		{"signal on file", contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, Signal: "x"}}, "completion.signal"},
		{"long signal", contract.Contract{Completion: contract.Completion{Type: contract.CompletionSignal, Signal: strings.Repeat("s", 300)}}, "completion.signal"},
		{"long done token", contract.Contract{Completion: contract.Completion{DoneToken: strings.Repeat("s", 300)}}, "completion.done_token"},
		{"blank done token", contract.Contract{Completion: contract.Completion{DoneToken: "  "}}, "completion.done_token"},
		{"long evaluate", contract.Contract{Completion: contract.Completion{Evaluate: strings.Repeat("e", 30000)}}, "completion.evaluate"},
		{"checklist without path", contract.Contract{Completion: contract.Completion{Checklist: &contract.Checklist{Count: 1}}}, "completion.checklist.path"},
		{"checklist outside", contract.Contract{Completion: contract.Completion{Checklist: &contract.Checklist{Path: "../x.md", Count: 1}}}, "completion.checklist.path"},
		{"checklist count", contract.Contract{Completion: contract.Completion{Checklist: &contract.Checklist{Path: "x.md"}}}, "completion.checklist.count"},
		{"unknown verification type", contract.Contract{Verification: contract.Verification{Type: "maybe"}}, "verification.type"},
		{"auto is fine", contract.Contract{Verification: contract.Verification{Type: contract.VerifyAuto}}, ""},
		{"bad generated_from", contract.Contract{Verification: contract.Verification{GeneratedFrom: "magic"}}, "verification.generated_from"},
		{"criterion without activity", contract.Contract{Verification: contract.Verification{Criteria: []contract.Criterion{{Description: "d"}}}}, "verification.criteria[0].activity"},
		{"criterion long activity", contract.Contract{Verification: contract.Verification{Criteria: []contract.Criterion{{Activity: strings.Repeat("a", 70), Description: "d"}}}}, "verification.criteria[0].activity"},
		{"criterion without description", contract.Contract{Verification: contract.Verification{Criteria: []contract.Criterion{{Activity: "lint"}, {Activity: "x", Description: " "}}}}, "verification.criteria[0].description"},
		{"second criterion without description", contract.Contract{Verification: contract.Verification{Criteria: []contract.Criterion{{Activity: "lint", Description: "d"}, {Activity: "x", Description: " "}}}}, "verification.criteria[1].description"},
		{"criterion long description", contract.Contract{Verification: contract.Verification{Criteria: []contract.Criterion{{Activity: "a", Description: strings.Repeat("d", 1100)}}}}, "verification.criteria[0].description"},
		{"bad timing", contract.Contract{Verification: contract.Verification{Criteria: []contract.Criterion{{Activity: "e2e", Description: "d", Timing: "later"}}}}, "verification.criteria[0].timing"},
		{"good timing", contract.Contract{Verification: contract.Verification{Criteria: []contract.Criterion{{Activity: "e2e", Description: "d", Timing: contract.TimingDeferred}}}}, ""},
		{"blank command", contract.Contract{Verification: contract.Verification{Criteria: []contract.Criterion{{Activity: "e2e", Description: "d", Command: " "}}}}, "verification.criteria[0].command"},
		{"long command", contract.Contract{Verification: contract.Verification{Criteria: []contract.Criterion{{Activity: "e2e", Description: "d", Command: strings.Repeat("c", 5000)}}}}, "verification.criteria[0].command"},
		{"too many criteria", contract.Contract{Verification: contract.Verification{Criteria: make([]contract.Criterion, 51)}}, "verification.criteria"},
		{"review without role", contract.Contract{Review: &contract.Review{}}, "review.role"},
		{"review bad role", contract.Contract{Review: &contract.Review{Role: "Re viewer"}}, "review.role"},
		{"review 4 rounds", contract.Contract{Review: &contract.Review{Role: "reviewer", MaxRounds: 4}}, "review.max_rounds"},
		{"review negative rounds", contract.Contract{Review: &contract.Review{Role: "reviewer", MaxRounds: -1}}, "review.max_rounds"},
		{"review 3 rounds", contract.Contract{Review: &contract.Review{Role: "reviewer", MaxRounds: 3, When: []string{"always", "final", "phase"}}}, ""},
		{"review negative every", contract.Contract{Review: &contract.Review{Role: "reviewer", Every: -1}}, "review.every"},
		{"review every without every", contract.Contract{Review: &contract.Review{Role: "reviewer", When: []string{"every"}}}, "review.every"},
		{"review every 2", contract.Contract{Review: &contract.Review{Role: "reviewer", When: []string{"every"}, Every: 2}}, ""},
		{"review bad when", contract.Contract{Review: &contract.Review{Role: "reviewer", When: []string{"always", "sometimes"}}}, "review.when[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields := fieldsOf(t, tc.c.Validate())
			if tc.field == "" {
				if fields != nil {
					t.Fatalf("want valid, got %v", fields)
				}
				return
			}
			if _, ok := fields[tc.field]; !ok {
				t.Fatalf("want an error on %s, got %v", tc.field, fields)
			}
		})
	}
}

func make21(s string) []string {
	out := make([]string, 21)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestContractValidateErrorCode(t *testing.T) {
	c := contract.Contract{Completion: contract.Completion{Type: "bogus"}}
	err := c.Validate()
	if ErrorCode(err) != EINVALID {
		t.Fatalf("code %q", ErrorCode(err))
	}
	// Task.Validate nests the contract's fields under contract.
	task := Task{Title: "t", Role: "dev", Contract: c}
	if f := fieldsOf(t, task.Validate()); f["contract.completion.type"] == "" {
		t.Errorf("task fields %v", f)
	}
}

func TestContractNormalize(t *testing.T) {
	c := contract.Contract{
		Completion: contract.Completion{Type: " File ", Verify: []string{" go test ./... "}, Checklist: &contract.Checklist{Path: " c.md ", Count: 1}},
		Verification: contract.Verification{GeneratedFrom: " User ", Criteria: []contract.Criterion{
			{Activity: " Unit-Test ", Description: " d ", Timing: " Immediate ", Command: " x ", Pattern: " p "},
		}},
		Review: &contract.Review{Role: " Reviewer ", When: []string{" Final "}},
	}
	orig := c.Completion.Verify
	c.Normalize()
	cp := c.Completion
	if cp.Type != contract.CompletionFile || cp.Path != contract.DefaultFileOutputPath || cp.MaxAttempts != 2 ||
		cp.Timeout.Duration != 30*time.Minute || cp.VerifyTimeout.Duration != 5*time.Minute ||
		cp.Verify[0] != "go test ./..." || cp.Checklist.Path != "c.md" {
		t.Errorf("completion %+v", cp)
	}
	if orig[0] != " go test ./... " {
		t.Error("Normalize modified the caller's slice")
	}
	v := c.Verification
	if v.Type != contract.VerifyAuto || v.GeneratedFrom != "user" || !reflect.DeepEqual(v.Criteria[0], contract.Criterion{Activity: "unit-test", Description: "d", Timing: "immediate", Command: "x", Pattern: "p"}) {
		t.Errorf("verification %+v", v)
	}
	if c.Review.Role != "reviewer" || c.Review.MaxRounds != 3 || c.Review.When[0] != "final" {
		t.Errorf("review %+v", c.Review)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("normalized contract invalid: %v", err)
	}

	for _, tc := range []struct {
		in   contract.Completion
		typ  contract.CompletionType
		path string
	}{
		{contract.Completion{}, contract.CompletionNone, ""},
		{contract.Completion{Path: "x.md"}, contract.CompletionFile, "x.md"},
		{contract.Completion{Type: contract.CompletionSignal, Signal: "ok"}, contract.CompletionSignal, contract.DefaultSignalOutputPath},
	} {
		c := contract.Contract{Completion: tc.in}
		c.Normalize()
		if c.Completion.Type != tc.typ || c.Completion.Path != tc.path {
			t.Errorf("%+v → %s %q", tc.in, c.Completion.Type, c.Completion.Path)
		}
	}
	r := contract.Contract{Review: &contract.Review{Role: "r"}}
	r.Normalize()
	if len(r.Review.When) != 1 || r.Review.When[0] != contract.ReviewAlways {
		t.Errorf("review when default %v", r.Review.When)
	}
}

func TestContractOutputPath(t *testing.T) {
	for _, tc := range []struct {
		c    contract.Completion
		want string
	}{
		{contract.Completion{Type: contract.CompletionFile, Path: "feature/{task_id}/output.md"}, "feature/42/output.md"},
		{contract.Completion{Type: contract.CompletionFile}, "42/output.md"},
		{contract.Completion{Type: contract.CompletionSignal}, "42/signal.json"},
		{contract.Completion{Type: contract.CompletionSignal, Path: "s/{task_id}-{task_id}.json"}, "s/42-42.json"},
		{contract.Completion{Path: "x/{task_id}"}, "x/42"},
		{contract.Completion{Type: contract.CompletionNone}, ""},
		{contract.Completion{}, ""},
	} {
		if got := (contract.Contract{Completion: tc.c}).OutputPath(42); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.c, got, tc.want)
		}
	}
}

func TestContractHash(t *testing.T) {
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Hour)
	a := contract.Contract{Verification: contract.Verification{Type: contract.VerifySkip, GeneratedFrom: "auto", GeneratedAt: &t1}}
	b := contract.Contract{Verification: contract.Verification{Type: contract.VerifySkip, GeneratedFrom: "auto", GeneratedAt: &t2}}
	if a.Hash() != b.Hash() {
		t.Error("GeneratedAt changed the hash")
	}
	if len(a.Hash()) != 96 {
		t.Errorf("hash length %d, want 96 hex digits (SHA-384)", len(a.Hash()))
	}
	if a.Verification.GeneratedAt == nil {
		t.Error("Hash modified the contract")
	}
	c := a
	c.Completion.DoneToken = "X"
	if c.Hash() == a.Hash() {
		t.Error("different contracts hash alike")
	}
}
