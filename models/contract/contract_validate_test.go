package contract

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func fieldsOf(t *testing.T, err error) map[string]string {
	t.Helper()
	if err == nil {
		return nil
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("not a *contract.Error: %v", err)
	}
	return e.Fields
}

func TestContractValidate(t *testing.T) {
	h := func(d time.Duration) Duration { return Duration{d} }
	ok := func(c Contract) Contract { return c }
	for _, tc := range []struct {
		name  string
		c     Contract
		field string // "" means valid
	}{
		{"zero contract", Contract{}, ""},
		{"file with path", ok(Contract{Completion: Completion{Type: CompletionFile, Path: "out/{task_id}.md", MinLength: 10}}), ""},
		{"signal", Contract{Completion: Completion{Type: CompletionSignal, Signal: "approved", Path: "s.json"}}, ""},
		{"none with verify", Contract{Completion: Completion{Type: CompletionNone, Verify: []string{"go test ./..."}}}, ""},
		{"unknown completion type", Contract{Completion: Completion{Type: "mail"}}, "completion.type"},
		{"absolute path", Contract{Completion: Completion{Type: CompletionFile, Path: "/etc/passwd"}}, "completion.path"},
		{"home path", Contract{Completion: Completion{Type: CompletionFile, Path: "~/x"}}, "completion.path"},
		{"drive path", Contract{Completion: Completion{Type: CompletionFile, Path: "C:/x"}}, "completion.path"},
		{"dotdot path", Contract{Completion: Completion{Type: CompletionFile, Path: "a/../../b"}}, "completion.path"},
		{"bare dotdot", Contract{Completion: Completion{Type: CompletionFile, Path: ".."}}, "completion.path"},
		{"dotdot inside is fine", Contract{Completion: Completion{Type: CompletionFile, Path: "a/../b.md"}}, ""},
		{"backslash", Contract{Completion: Completion{Type: CompletionFile, Path: `a\b.md`}}, "completion.path"},
		{"NUL", Contract{Completion: Completion{Type: CompletionFile, Path: "a\x00b"}}, "completion.path"},
		{"invalid utf8", Contract{Completion: Completion{Type: CompletionFile, Path: "a\xffb"}}, "completion.path"},
		{"workspace itself", Contract{Completion: Completion{Type: CompletionFile, Path: "./"}}, "completion.path"},
		{"long path", Contract{Completion: Completion{Type: CompletionFile, Path: strings.Repeat("a", 2000)}}, "completion.path"},
		{"path with none", Contract{Completion: Completion{Type: CompletionNone, Path: "x.md"}}, "completion.path"},
		{"negative min_length", Contract{Completion: Completion{Type: CompletionFile, MinLength: -1}}, "completion.min_length"},
		{"min_length on none", Contract{Completion: Completion{Type: CompletionNone, MinLength: 5}}, "completion.min_length"},
		{"negative max_attempts", Contract{Completion: Completion{MaxAttempts: -1}}, "completion.max_attempts"},
		{"max_attempts 21", Contract{Completion: Completion{MaxAttempts: 21}}, "completion.max_attempts"},
		{"max_attempts 20", Contract{Completion: Completion{MaxAttempts: 20}}, ""},
		{"negative timeout", Contract{Completion: Completion{Timeout: h(-time.Second)}}, "completion.timeout"},
		{"timeout over a day", Contract{Completion: Completion{Timeout: h(25 * time.Hour)}}, "completion.timeout"},
		{"timeout a day", Contract{Completion: Completion{Timeout: h(24 * time.Hour)}}, ""},
		{"negative verify_timeout", Contract{Completion: Completion{VerifyTimeout: h(-1)}}, "completion.verify_timeout"},
		{"verify_timeout over a day", Contract{Completion: Completion{VerifyTimeout: h(48 * time.Hour)}}, "completion.verify_timeout"},
		{"negative cooldown", Contract{Completion: Completion{Cooldown: h(-1)}}, "completion.cooldown"},
		{"cooldown over a day", Contract{Completion: Completion{Cooldown: h(25 * time.Hour)}}, "completion.cooldown"},
		{"empty verify", Contract{Completion: Completion{Verify: []string{"ok", ""}}}, "completion.verify[1]"},
		{"blank verify", Contract{Completion: Completion{Verify: []string{" \t"}}}, "completion.verify[0]"},
		{"NUL verify", Contract{Completion: Completion{Verify: []string{"a\x00"}}}, "completion.verify[0]"},
		{"long verify", Contract{Completion: Completion{Verify: []string{strings.Repeat("x", 5000)}}}, "completion.verify[0]"},
		{"too many verify", Contract{Completion: Completion{Verify: make21("true")}}, "completion.verify"},
		{"signal without signal", Contract{Completion: Completion{Type: CompletionSignal}}, "completion.signal"},
		{"signal on file", Contract{Completion: Completion{Type: CompletionFile, Signal: "x"}}, "completion.signal"},
		{"long signal", Contract{Completion: Completion{Type: CompletionSignal, Signal: strings.Repeat("s", 300)}}, "completion.signal"},
		{"long done token", Contract{Completion: Completion{DoneToken: strings.Repeat("s", 300)}}, "completion.done_token"},
		{"blank done token", Contract{Completion: Completion{DoneToken: "  "}}, "completion.done_token"},
		{"long evaluate", Contract{Completion: Completion{Evaluate: strings.Repeat("e", 30000)}}, "completion.evaluate"},
		{"checklist without path", Contract{Completion: Completion{Checklist: &Checklist{Count: 1}}}, "completion.checklist.path"},
		{"checklist outside", Contract{Completion: Completion{Checklist: &Checklist{Path: "../x.md", Count: 1}}}, "completion.checklist.path"},
		{"checklist count", Contract{Completion: Completion{Checklist: &Checklist{Path: "x.md"}}}, "completion.checklist.count"},
		{"unknown verification type", Contract{Verification: Verification{Type: "maybe"}}, "verification.type"},
		{"auto is fine", Contract{Verification: Verification{Type: VerifyAuto}}, ""},
		{"bad generated_from", Contract{Verification: Verification{GeneratedFrom: "magic"}}, "verification.generated_from"},
		{"criterion without activity", Contract{Verification: Verification{Criteria: []Criterion{{Description: "d"}}}}, "verification.criteria[0].activity"},
		{"criterion long activity", Contract{Verification: Verification{Criteria: []Criterion{{Activity: strings.Repeat("a", 70), Description: "d"}}}}, "verification.criteria[0].activity"},
		{"criterion without description", Contract{Verification: Verification{Criteria: []Criterion{{Activity: "lint"}, {Activity: "x", Description: " "}}}}, "verification.criteria[0].description"},
		{"second criterion without description", Contract{Verification: Verification{Criteria: []Criterion{{Activity: "lint", Description: "d"}, {Activity: "x", Description: " "}}}}, "verification.criteria[1].description"},
		{"criterion long description", Contract{Verification: Verification{Criteria: []Criterion{{Activity: "a", Description: strings.Repeat("d", 1100)}}}}, "verification.criteria[0].description"},
		{"bad timing", Contract{Verification: Verification{Criteria: []Criterion{{Activity: "e2e", Description: "d", Timing: "later"}}}}, "verification.criteria[0].timing"},
		{"good timing", Contract{Verification: Verification{Criteria: []Criterion{{Activity: "e2e", Description: "d", Timing: TimingDeferred}}}}, ""},
		{"blank command", Contract{Verification: Verification{Criteria: []Criterion{{Activity: "e2e", Description: "d", Command: " "}}}}, "verification.criteria[0].command"},
		{"long command", Contract{Verification: Verification{Criteria: []Criterion{{Activity: "e2e", Description: "d", Command: strings.Repeat("c", 5000)}}}}, "verification.criteria[0].command"},
		{"too many criteria", Contract{Verification: Verification{Criteria: make([]Criterion, 51)}}, "verification.criteria"},
		{"review without role", Contract{Review: &Review{}}, "review.role"},
		{"review bad role", Contract{Review: &Review{Role: "Re viewer"}}, "review.role"},
		{"review 4 rounds", Contract{Review: &Review{Role: "reviewer", MaxRounds: 4}}, "review.max_rounds"},
		{"review negative rounds", Contract{Review: &Review{Role: "reviewer", MaxRounds: -1}}, "review.max_rounds"},
		{"review 3 rounds", Contract{Review: &Review{Role: "reviewer", MaxRounds: 3, When: []string{"always", "final", "phase"}}}, ""},
		{"review negative every", Contract{Review: &Review{Role: "reviewer", Every: -1}}, "review.every"},
		{"review every without every", Contract{Review: &Review{Role: "reviewer", When: []string{"every"}}}, "review.every"},
		{"review every 2", Contract{Review: &Review{Role: "reviewer", When: []string{"every"}, Every: 2}}, ""},
		{"review bad when", Contract{Review: &Review{Role: "reviewer", When: []string{"always", "sometimes"}}}, "review.when[1]"},
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
	c := Contract{Completion: Completion{Type: "bogus"}}
	var e *Error
	if err := c.Validate(); !errors.As(err, &e) || e.Code != EINVALID {
		t.Fatalf("error %v", err)
	}
}

func TestContractNormalize(t *testing.T) {
	c := Contract{
		Completion: Completion{Type: " File ", Verify: []string{" go test ./... "}, Checklist: &Checklist{Path: " c.md ", Count: 1}},
		Verification: Verification{GeneratedFrom: " User ", Criteria: []Criterion{
			{Activity: " Unit-Test ", Description: " d ", Timing: " Immediate ", Command: " x ", Pattern: " p "},
		}},
		Review: &Review{Role: " Reviewer ", When: []string{" Final "}},
	}
	orig := c.Completion.Verify
	c.Normalize()
	cp := c.Completion
	if cp.Type != CompletionFile || cp.Path != DefaultFileOutputPath || cp.MaxAttempts != 2 ||
		cp.Timeout.Duration != 30*time.Minute || cp.VerifyTimeout.Duration != 5*time.Minute ||
		cp.Verify[0] != "go test ./..." || cp.Checklist.Path != "c.md" {
		t.Errorf("completion %+v", cp)
	}
	if orig[0] != " go test ./... " {
		t.Error("Normalize modified the caller's slice")
	}
	v := c.Verification
	if v.Type != VerifyAuto || v.GeneratedFrom != "user" || !reflect.DeepEqual(v.Criteria[0], Criterion{Activity: "unit-test", Description: "d", Timing: "immediate", Command: "x", Pattern: "p"}) {
		t.Errorf("verification %+v", v)
	}
	if c.Review.Role != "reviewer" || c.Review.MaxRounds != 3 || c.Review.When[0] != "final" {
		t.Errorf("review %+v", c.Review)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("normalized contract invalid: %v", err)
	}

	for _, tc := range []struct {
		in   Completion
		typ  CompletionType
		path string
	}{
		{Completion{}, CompletionNone, ""},
		{Completion{Path: "x.md"}, CompletionFile, "x.md"},
		{Completion{Type: CompletionSignal, Signal: "ok"}, CompletionSignal, DefaultSignalOutputPath},
	} {
		c := Contract{Completion: tc.in}
		c.Normalize()
		if c.Completion.Type != tc.typ || c.Completion.Path != tc.path {
			t.Errorf("%+v → %s %q", tc.in, c.Completion.Type, c.Completion.Path)
		}
	}
	r := Contract{Review: &Review{Role: "r"}}
	r.Normalize()
	if len(r.Review.When) != 1 || r.Review.When[0] != ReviewAlways {
		t.Errorf("review when default %v", r.Review.When)
	}
}

func TestContractOutputPath(t *testing.T) {
	for _, tc := range []struct {
		c    Completion
		want string
	}{
		{Completion{Type: CompletionFile, Path: "feature/{task_id}/output.md"}, "feature/42/output.md"},
		{Completion{Type: CompletionFile}, "42/output.md"},
		{Completion{Type: CompletionSignal}, "42/signal.json"},
		{Completion{Type: CompletionSignal, Path: "s/{task_id}-{task_id}.json"}, "s/42-42.json"},
		{Completion{Path: "x/{task_id}"}, "x/42"},
		{Completion{Type: CompletionNone}, ""},
		{Completion{}, ""},
	} {
		if got := (Contract{Completion: tc.c}).OutputPath(42); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.c, got, tc.want)
		}
	}
}

func TestContractHash(t *testing.T) {
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Hour)
	a := Contract{Verification: Verification{Type: VerifySkip, GeneratedFrom: "auto", GeneratedAt: &t1}}
	b := Contract{Verification: Verification{Type: VerifySkip, GeneratedFrom: "auto", GeneratedAt: &t2}}
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
