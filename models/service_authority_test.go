package models

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/models/contract"
)

func TestRequireCommandAuthority(t *testing.T) {
	shell := contract.Contract{Completion: contract.Completion{Verify: []string{" ", "make check"}},
		Verification: contract.Verification{Criteria: []contract.Criterion{{Activity: "unit-test"}, {Activity: "lint", Command: "golangci-lint run"}}}}
	if got := shell.CommandFields(); !slices.Equal(got, []string{"completion.verify[1]", "verification.criteria[1].command"}) {
		t.Fatalf("CommandFields = %q", got)
	}
	byActivity := contract.Contract{Completion: contract.Completion{Verify: []string{"  "}},
		Verification: contract.Verification{Criteria: []contract.Criterion{{Activity: "unit-test", Command: " "}}}}
	for _, roles := range [][]string{{"admin"}, {"editor"}, {"lead"}, {"developer", "editor"}} {
		if err := requireCommandAuthority(&Agent{Name: "a", Roles: roles}, shell, ""); err != nil {
			t.Fatalf("%v may write commands: %v", roles, err)
		}
	}
	for _, roles := range [][]string{{"worker"}, {"developer"}, {"tester"}, {"exec"}, nil} {
		a := &Agent{Name: "w", Roles: roles}
		var e *Error
		err := requireCommandAuthority(a, shell, "steps[2]")
		if !errors.As(err, &e) || e.Code != EFORBIDDEN || e.Rule != RuleCommandsNeedEditor {
			t.Fatalf("%v: %v, want %s", roles, err, RuleCommandsNeedEditor)
		}
		if want := "steps[2].completion.verify[1]"; !strings.Contains(e.Message, want) {
			t.Fatalf("message %q does not name %s", e.Message, want)
		}
		if err := requireCommandAuthority(a, byActivity, ""); err != nil {
			t.Fatalf("%v naming criteria by activity: %v", roles, err)
		}
	}
	rules := DefaultRules()
	if err := requireRulesAuthority(&Agent{Roles: []string{"tester"}}, &rules); ErrorCode(err) != EFORBIDDEN {
		t.Fatalf("a tester saving rules: %v", err)
	}
	if err := requireRulesAuthority(&Agent{Roles: []string{"editor"}}, &rules); err != nil {
		t.Fatalf("an editor saving rules: %v", err)
	}
}
