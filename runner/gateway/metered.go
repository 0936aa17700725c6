package gateway

import (
	"math"
	"sort"

	"github.com/countersign/countersign/models"
)

// Tokens is one call's (or a sum of calls') token counts in Anthropic's convention:
// Input excludes cache reads and writes, so each count is priced at one rate. OpenAI's
// counts are brought to it (input_tokens minus its cached_tokens).
type Tokens struct {
	Input      int64 `json:"input_tokens"`
	Output     int64 `json:"output_tokens"`
	CacheRead  int64 `json:"cache_read_tokens"`
	CacheWrite int64 `json:"cache_write_tokens"`
}

// add returns t plus o.
func (t Tokens) add(o Tokens) Tokens {
	return Tokens{t.Input + o.Input, t.Output + o.Output, t.CacheRead + o.CacheRead, t.CacheWrite + o.CacheWrite}
}

// cost prices t at p in USD.
func (t Tokens) cost(p models.ModelPrice) float64 {
	return (float64(t.Input)*p.InputPerMTok + float64(t.Output)*p.OutputPerMTok +
		float64(t.CacheRead)*p.CacheReadPerMTok + float64(t.CacheWrite)*p.CacheWritePerMTok) / 1e6
}

// ModelUsage is what one model was used for under a credential.
type ModelUsage struct {
	Tokens
	// CostUSD is the tokens priced by the gateway's price table; zero when Unpriced.
	CostUSD float64 `json:"cost_usd"`
	// Calls counts the forwarded calls to this model.
	Calls int `json:"calls"`
	// Estimated counts calls whose usage never arrived (the stream was cut, the client
	// left early): each was charged its reservation, the worst case, in CostUSD.
	Estimated int  `json:"estimated,omitempty"`
	Unpriced  bool `json:"unpriced,omitempty"`
}

// Metered is what the gateway counted for one credential: per-model usage, the total
// cost, and the calls it forwarded and refused.
type Metered struct {
	Models  map[string]ModelUsage `json:"models"`
	CostUSD float64               `json:"cost_usd"`
	// Calls counts forwarded calls (metered or not, as count_tokens).
	Calls int `json:"calls"`
	// Refused counts calls the gateway answered itself (bad request, spent budget).
	Refused int `json:"refused"`
	// BudgetRefused counts the refusals for a cap without room; BudgetKey is the cap
	// that first refused. A non-zero count means the attempt ends at stage budget.
	BudgetRefused int    `json:"budget_refused"`
	BudgetKey     string `json:"budget_key,omitempty"`
}

// clone returns a deep copy of m, safe to hand out while m changes.
func (m Metered) clone() Metered {
	out := m
	out.Models = make(map[string]ModelUsage, len(m.Models))
	for k, v := range m.Models {
		out.Models[k] = v
	}
	return out
}

// record adds one forwarded call's usage of model, priced (costUSD) or not.
func (m *Metered) record(model string, t Tokens, costUSD float64, priced, estimated bool) {
	if m.Models == nil {
		m.Models = map[string]ModelUsage{}
	}
	u := m.Models[model]
	u.Tokens = u.Tokens.add(t)
	u.CostUSD += costUSD
	u.Calls++
	if estimated {
		u.Estimated++
	}
	if !priced {
		u.Unpriced = true
	}
	m.Models[model] = u
	m.CostUSD += costUSD
}

// Usage sums m as the attempt's metered models.Usage, priced by the gateway
// (CostSource "priced"). The model is the one that cost the most; a model without a
// price leaves the cost partly unknown, said in Note. Nil when nothing was used.
func (m Metered) Usage() *models.Usage {
	if len(m.Models) == 0 {
		return nil
	}
	names := make([]string, 0, len(m.Models))
	var sum Tokens
	for name, u := range m.Models {
		names = append(names, name)
		sum = sum.add(u.Tokens)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := m.Models[names[i]], m.Models[names[j]]
		return a.CostUSD > b.CostUSD || (a.CostUSD == b.CostUSD && names[i] < names[j])
	})
	cost := math.Round(m.CostUSD*1e6) / 1e6
	u := &models.Usage{InputTokens: &sum.Input, OutputTokens: &sum.Output, CacheReadTokens: &sum.CacheRead,
		CacheWriteTokens: &sum.CacheWrite, CostUSD: &cost, CostSource: models.CostPriced, Model: names[0]}
	for _, name := range names {
		if m.Models[name].Unpriced {
			u.AddNote("no price for model " + name + ": its cost is not counted")
		}
		if n := m.Models[name].Estimated; n > 0 {
			u.AddNote("some calls to " + name + " were charged their worst case: their usage never arrived")
		}
	}
	return u
}
