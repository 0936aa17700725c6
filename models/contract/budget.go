package contract

import (
	"fmt"
	"math"
	"strings"
)

// Budget caps what a task (all its attempts), a goal (all its tasks) or an agent (a
// day) may spend. A nil field is no cap.
type Budget struct {
	MaxCostUSD *float64 `json:"max_cost_usd,omitempty" yaml:"max_cost_usd,omitempty"`
	MaxTokens  *int64   `json:"max_tokens,omitempty" yaml:"max_tokens,omitempty"`
}

// IsZero reports whether the budget caps nothing.
func (b *Budget) IsZero() bool { return b == nil || (b.MaxCostUSD == nil && b.MaxTokens == nil) }

// Problem says what is wrong with the budget, "" when nothing is.
func (b *Budget) Problem() string {
	if b == nil {
		return ""
	}
	if c := b.MaxCostUSD; c != nil && (*c <= 0 || math.IsNaN(*c) || math.IsInf(*c, 0)) {
		return "max_cost_usd must be more than 0"
	}
	if t := b.MaxTokens; t != nil && *t <= 0 {
		return "max_tokens must be more than 0"
	}
	return ""
}

// Summary says what the budget caps: "$3.00, 100,000 tokens"; "" for none.
func (b *Budget) Summary() string {
	if b.IsZero() {
		return ""
	}
	var parts []string
	if b.MaxCostUSD != nil {
		parts = append(parts, USD(*b.MaxCostUSD))
	}
	if b.MaxTokens != nil {
		parts = append(parts, Thousands(*b.MaxTokens)+" tokens")
	}
	return strings.Join(parts, ", ")
}

// USD writes an amount of dollars for people: "$1.23", "$0.0042".
func USD(v float64) string {
	if v != 0 && v < 0.01 && v > -0.01 {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}

// Thousands writes n with commas: 1,234,567.
func Thousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + Thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
