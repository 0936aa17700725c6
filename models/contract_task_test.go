package models

import (
	"errors"
	"testing"
	"time"

	"github.com/countersign/countersign/models/contract"
)

// genNow is the generation time of the contracts these tests resolve.
var genNow = time.Date(2026, 2, 28, 10, 0, 0, 0, time.UTC)

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

// TestTaskValidateNestsContract: Task.Validate nests the contract's fields under
// contract.
func TestTaskValidateNestsContract(t *testing.T) {
	c := contract.Contract{Completion: contract.Completion{Type: "bogus"}}
	if ErrorCode(c.Validate()) != EINVALID {
		t.Fatalf("code %q", ErrorCode(c.Validate()))
	}
	task := Task{Title: "t", Role: "dev", Contract: c}
	if f := fieldsOf(t, task.Validate()); f["contract.completion.type"] == "" {
		t.Errorf("task fields %v", f)
	}
}
