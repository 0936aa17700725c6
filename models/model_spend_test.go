package models

import (
	"context"
	"testing"
)

// TestModelSpendRefusesAttemptTokensAndOtherWindows: a request made with an attempt
// token (a worker's) may not read what every agent spent, and a window other than 7
// or 30 days is refused, both before the store is read (the service here has none).
func TestModelSpendRefusesAttemptTokensAndOtherWindows(t *testing.T) {
	s := NewService(nil, nil)
	worker := &Agent{ID: 1, Name: "bot", Scope: &TokenScope{TokenID: 1, TaskID: 2, Attempt: 1}}
	if _, err := s.Stats.ModelSpend(context.Background(), worker, 7, 0); ErrorCode(err) != EFORBIDDEN {
		t.Fatalf("an attempt token read model spend: %v", err)
	}
	lead := &Agent{ID: 2, Name: "lead", Roles: []string{RoleLead}}
	if _, err := s.Stats.ModelSpend(context.Background(), lead, 14, 0); ErrorCode(err) != EINVALID {
		t.Fatalf("14 days: %v", err)
	}
}
