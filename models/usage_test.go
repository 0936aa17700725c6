package models

import (
	"testing"

	"github.com/countersign/countersign/models/contract"
)

func i64(n int64) *int64     { return &n }
func f64(v float64) *float64 { return &v }

// TestUsagePricingAndSums: tokens are priced by the first matching pattern, a reported
// cost wins, an unknown model leaves the cost unknown with a note, and sums keep what
// is known without making up zeros.
func TestUsagePricingAndSums(t *testing.T) {
	u := &Usage{Model: "claude-sonnet-4-5-20250929", InputTokens: i64(1_000_000), OutputTokens: i64(100_000), CacheReadTokens: i64(1_000_000)}
	u.PriceWith(DefaultPrices())
	if u.CostUSD == nil || *u.CostUSD != 3+1.5+0.3 || u.CostSource != CostPriced || u.Price == nil {
		t.Fatalf("Sonnet 4.5: %+v", u)
	}
	r := &Usage{Model: "claude-sonnet-4-5", InputTokens: i64(10), CostUSD: f64(0.5)}
	r.PriceWith(DefaultPrices())
	if *r.CostUSD != 0.5 || r.CostSource != CostReported {
		t.Fatalf("a reported cost was replaced: %+v", r)
	}
	x := &Usage{Model: "gpt-9", InputTokens: i64(10)}
	x.PriceWith(DefaultPrices())
	if x.CostUSD != nil || x.Note == "" {
		t.Fatalf("an unknown model: %+v", x)
	}
	sum := r.Add(x)
	if *sum.CostUSD != 0.5 || *sum.InputTokens != 20 || sum.Note == "" {
		t.Fatalf("a sum with an unknown part: %+v", sum)
	}
	var none *Usage
	if none.Add(nil) != nil || none.Tokens() != nil || !none.Empty() {
		t.Fatal("nil usage is not empty")
	}
	if s := (&Usage{InputTokens: i64(1234567), CostUSD: f64(0.0042), Turns: new(int)}).Summary(); s != "1,234,567 in · $0.0042 · 0 turns" {
		t.Fatalf("Summary = %q", s)
	}
	if p := PricesProblem([]ModelPrice{{Pattern: "("}}); p == "" {
		t.Fatal("a broken pattern was accepted")
	}
	d := DecideBudget([]BudgetLimit{{Budget: contract.Budget{MaxCostUSD: f64(3)}, Spend: Spend{CostUSD: 1, ReservedUSD: 2}}})
	if !d.Wait || d.Spent != nil {
		t.Fatalf("a cap held by reservations: %+v", d)
	}
	d = DecideBudget([]BudgetLimit{{Budget: contract.Budget{MaxCostUSD: f64(3)}, Spend: Spend{CostUSD: 1}}, {Budget: contract.Budget{MaxCostUSD: f64(10)}}})
	if d.Wait || d.ReserveUSD == nil || *d.ReserveUSD != 2 {
		t.Fatalf("the tightest cap's room: %+v", d)
	}
	if d := DecideBudget([]BudgetLimit{{Budget: contract.Budget{MaxTokens: i64(100)}, Spend: Spend{Tokens: 100}}}); d.Spent == nil {
		t.Fatal("a spent token cap does not stop")
	}
}
