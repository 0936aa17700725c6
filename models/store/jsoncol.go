package store

import (
	"encoding/json"
	"fmt"
	"github.com/countersign/countersign/models/contract"
)

// toJSON encodes v for a JSON text column; empty is what an empty value is stored as
// ("[]" or "{}").
func toJSON(v any, empty string) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("store: encode JSON column: %w", err)
	}
	if s := string(b); s != "null" {
		return s, nil
	}
	return empty, nil
}

// fromJSON decodes a JSON text column into v; an empty column leaves v as it is.
func fromJSON(s string, v any, column string) error {
	if s == "" {
		return nil
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return fmt.Errorf("store: decode %s: %w", column, err)
	}
	return nil
}

// rawOrNil turns a stored JSON document back into a json.RawMessage, nil when empty.
func rawOrNil(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// bytesOrNil returns nil for an empty byte slice, so that NULL and empty read alike.
func bytesOrNil(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// budgetJSON stores a budget: "" for none. Budgets are validated before they are
// stored (no NaN), so encoding cannot fail.
func budgetJSON(b *contract.Budget) string {
	if b.IsZero() {
		return ""
	}
	s, _ := toJSON(b, "")
	return s
}

// budgetOf reads a stored budget; nil for none or for a document that is not one.
func budgetOf(s string) *contract.Budget {
	var b contract.Budget
	if s == "" || json.Unmarshal([]byte(s), &b) != nil || b.IsZero() {
		return nil
	}
	return &b
}
