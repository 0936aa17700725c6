package models

import (
	"strings"
	"testing"
)

func TestReconcileUsage(t *testing.T) {
	i := func(n int64) *int64 { return &n }
	f := func(v float64) *float64 { return &v }
	metered := &Usage{InputTokens: i(1000), OutputTokens: i(200), CostUSD: f(0.0060), Model: "claude-sonnet-4-5"}
	cases := []struct {
		name     string
		reported *Usage
		cost     float64
		mismatch string
	}{
		{"nothing reported", nil, 0.0060, ""},
		{"honest", &Usage{InputTokens: i(1000), OutputTokens: i(200), CostUSD: f(0.0061)}, 0.0060, ""},
		{"reports zero", &Usage{CostUSD: f(0)}, 0.0060, "reported a cost of $0.00"},
		{"fewer tokens", &Usage{InputTokens: i(10), OutputTokens: i(2)}, 0.0060, "reported 12 tokens; the gateway metered 1200"},
		// OpenAI's convention: the cached input counted inside input_tokens too.
		{"cached counted twice", &Usage{InputTokens: i(1000), OutputTokens: i(200), CacheReadTokens: i(400)}, 0.0060, ""},
		{"cache reads invented", &Usage{InputTokens: i(1000), OutputTokens: i(200), CacheReadTokens: i(5000)}, 0.0060, "reported 6200 tokens"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := ReconcileUsage(metered, c.reported)
			if u.Source != UsageMetered || *u.CostUSD != c.cost {
				t.Fatalf("charged %+v, want the metered %v", u, c.cost)
			}
			if (c.mismatch == "") != (u.Mismatch == "") || !strings.Contains(u.Mismatch, c.mismatch) {
				t.Errorf("mismatch %q, want %q", u.Mismatch, c.mismatch)
			}
			if c.reported != nil && u.Reported == nil {
				t.Error("the report was not kept beside the metered usage")
			}
		})
	}
	if u := ReconcileUsage(nil, &Usage{CostUSD: f(0.5)}); u.Source != "" || *u.CostUSD != 0.5 {
		t.Errorf("without metering the report is the usage: %+v", u)
	}
}
