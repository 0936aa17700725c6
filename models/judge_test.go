package models

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/models/contract"
)

func TestHeldOutNeedsCommandAuthority(t *testing.T) {
	c := contract.Contract{Verification: contract.Verification{HeldOut: []contract.HeldOutTest{{Path: "h_test.go", Content: "package h"}}}}
	if err := requireCommandAuthority(&Agent{Name: "w", Roles: []string{"worker"}}, c, ""); ErrorCode(err) != EFORBIDDEN {
		t.Fatalf("a worker setting held-out tests: %v, want forbidden", err)
	}
	may := contract.Contract{Verification: contract.Verification{TestsMayChange: true}}
	if err := requireCommandAuthority(&Agent{Name: "w", Roles: []string{"developer"}}, may, ""); ErrorCode(err) != EFORBIDDEN {
		t.Fatalf("a developer letting the tests change: %v, want forbidden", err)
	}
	if err := requireCommandAuthority(&Agent{Name: "l", Roles: []string{"lead"}}, c, ""); err != nil {
		t.Fatalf("a lead setting held-out tests: %v", err)
	}
}

func TestTaskForReaderHidesHeldOut(t *testing.T) {
	secret := "func TestBig(t *testing.T) { if Add(10, 4) != 14 { t.Fatal() } }"
	task := Task{ID: 1, Contract: contract.Contract{Verification: contract.Verification{HeldOut: []contract.HeldOutTest{{Path: "big_test.go", Content: secret}}}}}
	scoped := &Agent{Name: "lead-attempt", Roles: []string{"lead"}, Scope: &TokenScope{TaskID: 1}}
	for _, reader := range []*Agent{nil, {Name: "w", Roles: []string{"worker"}}, {Name: "e", Roles: []string{"exec"}}, scoped} {
		b, _ := json.Marshal(task.ForReader(reader))
		if strings.Contains(string(b), "big_test.go") || strings.Contains(string(b), "Add(10, 4)") {
			t.Fatalf("%v reads the held-out test: %s", reader, b)
		}
		if !strings.Contains(string(b), `"held_out_count":1`) {
			t.Fatalf("%v does not see how many tests are held out: %s", reader, b)
		}
	}
	if got := task.ForReader(&Agent{Name: "ed", Roles: []string{"editor"}}); len(got.Contract.Verification.HeldOut) != 1 {
		t.Fatal("an editor does not read the held-out test back")
	}
	if len(task.Contract.Verification.HeldOut) != 1 {
		t.Fatal("ForReader changed the task it was given")
	}
}

func TestAttemptTokenWritesNoCommands(t *testing.T) {
	c := contract.Contract{Verification: contract.Verification{HeldOut: []contract.HeldOutTest{{Path: "h_test.go", Content: "package h"}}}}
	scoped := &Agent{Name: "lead", Roles: []string{"lead"}, Scope: &TokenScope{TaskID: 1}}
	if err := requireCommandAuthority(scoped, c, ""); ErrorCode(err) != EFORBIDDEN {
		t.Fatalf("a lead's attempt token setting held-out tests: %v, want forbidden", err)
	}
}

func TestTemplateChangeHidesHeldOutContent(t *testing.T) {
	secret := "if Add(10, 4) != 14"
	prev := &Template{Name: "t", Version: 1, Steps: []Step{{Name: "a", Role: "dev"}}}
	next := &Template{Name: "t", Version: 2, Steps: []Step{{Name: "a", Role: "dev",
		Verification: contract.Verification{HeldOut: []contract.HeldOutTest{{Path: "h_test.go", Content: secret}}}}}}
	c, err := templateChange(&Agent{Name: "ed"}, prev, next)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(c.Diff, secret) || !strings.Contains(c.Diff, "h_test.go") || !strings.Contains(c.Diff, "sha256") {
		t.Fatalf("template.changed diff: %s", c.Diff)
	}
	if next.Steps[0].Verification.HeldOut[0].Content != secret {
		t.Fatal("templateChange changed the template it was given")
	}
}
