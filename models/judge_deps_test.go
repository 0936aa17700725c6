package models

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/models/contract"
)

// TestDependenciesMayChangeNeedsCommandAuthority: only an admin, editor or lead may
// let a task change its dependencies (it loosens the judge as tests_may_change does),
// never through an attempt token.
func TestDependenciesMayChangeNeedsCommandAuthority(t *testing.T) {
	c := contract.Contract{Verification: contract.Verification{DependenciesMayChange: true}}
	for _, a := range []*Agent{{Name: "w", Roles: []string{"worker"}}, {Name: "d", Roles: []string{"developer"}},
		{Name: "l", Roles: []string{"lead"}, Scope: &TokenScope{TaskID: 1}}} {
		err := requireCommandAuthority(a, c, "steps[1]")
		if ErrorCode(err) != EFORBIDDEN || !strings.Contains(err.Error(), "steps[1].verification.dependencies_may_change") {
			t.Errorf("%s (%v) letting dependencies change: %v, want forbidden naming the field", a.Name, a.Roles, err)
		}
	}
	for _, role := range []string{"lead", "editor", "admin"} {
		if err := requireCommandAuthority(&Agent{Name: role, Roles: []string{role}}, c, ""); err != nil {
			t.Errorf("a %s letting dependencies change: %v", role, err)
		}
	}
}

// TestDependenciesMayChangeDecodes: a template step's YAML and the JSON API take the
// field (the strict schema knows it), and contract resolution keeps the author's value
// whatever generation decides.
func TestDependenciesMayChangeDecodes(t *testing.T) {
	tpl, err := ParseTemplate([]byte("name: deps\nsteps:\n  - name: a\n    role: developer\n    verification:\n      type: auto\n      dependencies_may_change: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !tpl.Steps[0].Verification.DependenciesMayChange {
		t.Fatal("dependencies_may_change lost reading a template")
	}
	c := contract.ResolveContract(contract.Contract{Verification: tpl.Steps[0].Verification}, "Add a YAML parser", "use a library", nil, DefaultRules().Rules, genNow)
	if !c.Verification.DependenciesMayChange {
		t.Fatal("contract generation dropped dependencies_may_change")
	}
	if !strings.Contains(contract.RenderContract(c, 1), "You may change the project's dependencies") {
		t.Fatal("the brief does not say that dependencies may change")
	}
}
