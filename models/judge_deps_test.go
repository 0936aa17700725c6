package models

import (
	"slices"
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
	c := contract.ResolveContract(contract.Contract{Verification: tpl.Steps[0].Verification}, "Add a YAML parser", "use a library", nil, DefaultRules(), genNow)
	if !c.Verification.DependenciesMayChange {
		t.Fatal("contract generation dropped dependencies_may_change")
	}
	if !strings.Contains(judgeNote(c.Verification), "You may change the project's dependencies") ||
		!strings.Contains(judgeNote(contract.Verification{}), "dependencies (lockfiles, dependency lists, vendored code) are fixed") {
		t.Fatal("the brief does not say whether dependencies may change")
	}
}

// TestProtectedForPins: a stack's pins are protected unless the contract lets
// dependencies change; its runner configuration is protected either way.
func TestProtectedForPins(t *testing.T) {
	r := DefaultRules()
	fixed := r.ProtectedFor(contract.Verification{Stacks: []string{"go", "node"}})
	free := r.ProtectedFor(contract.Verification{Stacks: []string{"go", "node"}, DependenciesMayChange: true})
	for _, p := range []string{"go.mod#replace", "**/vendor/**", "package-lock.json", "package.json#.dependencies"} {
		if !slices.Contains(fixed, p) || slices.Contains(free, p) {
			t.Errorf("%s: protected %v with dependencies fixed, %v when they may change", p, slices.Contains(fixed, p), slices.Contains(free, p))
		}
	}
	for _, p := range []string{".npmrc", "go.mod#godebug", "*_test.go"} {
		if !slices.Contains(free, p) {
			t.Errorf("%s not protected when dependencies may change", p)
		}
	}
	if pins := r.PinsFor(contract.Verification{Stacks: []string{"go"}, DependenciesMayChange: true}); !slices.Contains(pins, "go.mod#replace") || slices.Contains(pins, "package-lock.json") {
		t.Errorf("PinsFor go: %v", pins)
	}
	if slices.Contains(fixed, "requirements*.txt") {
		t.Error("the python stack's pins protected in a go and node workspace")
	}
}

// TestStackPinsAndInstallValidate: the rules refuse bad pins and install entries.
func TestStackPinsAndInstallValidate(t *testing.T) {
	for name, edit := range map[string]func(*ProjectRules) string{
		"absolute pin": func(r *ProjectRules) string { r.Stacks[0].Pins[0] = "/etc/x"; return "stacks[0].pins[0]" },
		"unknown part": func(r *ProjectRules) string { r.Stacks[0].Pins[0] = "go.mod#nosuch"; return "stacks[0].pins[0]" },
		"empty install": func(r *ProjectRules) string {
			r.Stacks[0].Install[0].Command = " "
			return "stacks[0].install[0].command"
		},
		"install tool": func(r *ProjectRules) string {
			r.Stacks[1].Install[0].Tools = []string{"/bin/sh"}
			return "stacks[1].install[0].tools[0]"
		},
		"install when": func(r *ProjectRules) string {
			r.Stacks[1].Install[0].When = []contract.Condition{{}}
			return "stacks[1].install[0].when[0]"
		},
	} {
		r := DefaultRules()
		field := edit(&r)
		if f := fieldsOf(t, r.Validate()); f[field] == "" {
			t.Errorf("%s: want an error on %s, got %v", name, field, f)
		}
	}
	if contract.ProtectPatternProblem("go.mod#replace") != "" || contract.ProtectPatternProblem("go.mod#nosuch") == "" {
		t.Error("go.mod directive parts")
	}
}
