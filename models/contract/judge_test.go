package contract

import (
	"slices"
	"strings"
	"testing"
)

func TestJudgeSettingsValidate(t *testing.T) {
	ok := Contract{Verification: Verification{Type: VerifyVerifiable,
		Protect: []string{"spec/**", "package.json#scripts"},
		HeldOut: []HeldOutTest{{Path: "calc_heldout_test.go", Content: "package calc\n"}}}}
	ok.Normalize()
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid judge settings refused: %v", err)
	}
	for name, tc := range map[string]struct {
		v     Verification
		field string
	}{
		"absolute protect":   {Verification{Protect: []string{"/etc/**"}}, "verification.protect[0]"},
		"climbing protect":   {Verification{Protect: []string{"../x"}}, "verification.protect[0]"},
		"bad glob":           {Verification{Protect: []string{"a["}}, "verification.protect[0]"},
		"empty part":         {Verification{Protect: []string{"package.json#"}}, "verification.protect[0]"},
		"held-out escapes":   {Verification{HeldOut: []HeldOutTest{{Path: "../x_test.go", Content: "x"}}}, "verification.held_out[0].path"},
		"held-out absolute":  {Verification{HeldOut: []HeldOutTest{{Path: "/tmp/x_test.go", Content: "x"}}}, "verification.held_out[0].path"},
		"held-out empty":     {Verification{HeldOut: []HeldOutTest{{Path: "x_test.go"}}}, "verification.held_out[0].content"},
		"held-out duplicate": {Verification{HeldOut: []HeldOutTest{{Path: "x_test.go", Content: "a"}, {Path: "./x_test.go", Content: "b"}}}, "verification.held_out[1].path"},
		"held-out too large": {Verification{HeldOut: []HeldOutTest{{Path: "x_test.go", Content: strings.Repeat("a", maxHeldOutBytes+1)}}}, "verification.held_out[0].content"},
	} {
		c := Contract{Verification: tc.v}
		c.Verification.Type = VerifyVerifiable
		c.Normalize()
		err := c.Validate()
		var fe *Error
		if err == nil || !asError(err, &fe) || fe.Fields[tc.field] == "" {
			t.Errorf("%s: %v, want a field error on %s", name, err, tc.field)
		}
	}
}

func asError(err error, e **Error) bool {
	x, ok := err.(*Error)
	*e = x
	return ok
}

// TestProtectedForPins: a stack's pins are protected unless the contract lets
// dependencies change; its runner configuration is protected either way.
func TestProtectedForPins(t *testing.T) {
	r := DefaultRules()
	fixed := r.ProtectedFor(Verification{Stacks: []string{"go", "node"}})
	free := r.ProtectedFor(Verification{Stacks: []string{"go", "node"}, DependenciesMayChange: true})
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
	if pins := r.PinsFor(Verification{Stacks: []string{"go"}, DependenciesMayChange: true}); !slices.Contains(pins, "go.mod#replace") || slices.Contains(pins, "package-lock.json") {
		t.Errorf("PinsFor go: %v", pins)
	}
	if slices.Contains(fixed, "requirements*.txt") {
		t.Error("the python stack's pins protected in a go and node workspace")
	}
}

// TestStackPinsAndInstallValidate: the rules refuse bad pins and install entries.
func TestStackPinsAndInstallValidate(t *testing.T) {
	for name, edit := range map[string]func(*Rules) string{
		"absolute pin": func(r *Rules) string { r.Stacks[0].Pins[0] = "/etc/x"; return "stacks[0].pins[0]" },
		"unknown part": func(r *Rules) string { r.Stacks[0].Pins[0] = "go.mod#nosuch"; return "stacks[0].pins[0]" },
		"empty install": func(r *Rules) string {
			r.Stacks[0].Install[0].Command = " "
			return "stacks[0].install[0].command"
		},
		"install tool": func(r *Rules) string {
			r.Stacks[1].Install[0].Tools = []string{"/bin/sh"}
			return "stacks[1].install[0].tools[0]"
		},
		"install when": func(r *Rules) string {
			r.Stacks[1].Install[0].When = []Condition{{}}
			return "stacks[1].install[0].when[0]"
		},
	} {
		r := DefaultRules()
		field := edit(&r)
		if f := fieldsOf(t, r.Validate()); f[field] == "" {
			t.Errorf("%s: want an error on %s, got %v", name, field, f)
		}
	}
	if ProtectPatternProblem("go.mod#replace") != "" || ProtectPatternProblem("go.mod#nosuch") == "" {
		t.Error("go.mod directive parts")
	}
}

// TestJudgeNoteDependencies: the brief says whether dependencies may change.
func TestJudgeNoteDependencies(t *testing.T) {
	if !strings.Contains(judgeNote(Verification{DependenciesMayChange: true}), "You may change the project's dependencies") ||
		!strings.Contains(judgeNote(Verification{}), "dependencies (lockfiles, dependency lists, vendored code) are fixed") {
		t.Fatal("the brief does not say whether dependencies may change")
	}
}
