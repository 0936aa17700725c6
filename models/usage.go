package models

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/countersign/countersign/models/contract"
)

// Usage is what one attempt (its worker, and the evaluator's calls) used: tokens,
// cost, turns, model and the worker's session. A nil field is unknown — never a
// made-up zero: a worker that reports nothing has no usage, not a free one.
type Usage struct {
	InputTokens      *int64   `json:"input_tokens"`
	OutputTokens     *int64   `json:"output_tokens"`
	CacheReadTokens  *int64   `json:"cache_read_tokens"`
	CacheWriteTokens *int64   `json:"cache_write_tokens"`
	CostUSD          *float64 `json:"cost_usd"`
	// CostSource says where CostUSD came from: "reported" (the worker said, as Claude
	// Code's total_cost_usd) or "priced" (tokens times Price, the price the attempt was
	// charged, kept so that a later price change rewrites no history).
	CostSource string      `json:"cost_source,omitempty"`
	Price      *ModelPrice `json:"price,omitempty"`
	Turns      *int        `json:"turns"`
	Model      string      `json:"model,omitempty"`
	SessionID  string      `json:"session_id,omitempty"`
	// Note says why part of the usage is unknown (a usage file that was not JSON, a
	// model without a price).
	Note string `json:"note,omitempty"`
	// Source is UsageMetered when Countersign's model gateway counted these figures,
	// "" when the worker reported them.
	Source string `json:"source,omitempty"`
	// Reported is what the worker reported, kept beside metered usage (nil when it
	// reported nothing, or when the usage is its report).
	Reported *Usage `json:"reported,omitempty"`
	// Mismatch says how Reported differs from the metered figures beyond the
	// tolerances (ReconcileUsage): the attempt is flagged.
	Mismatch string `json:"mismatch,omitempty"`
}

// Cost sources.
const (
	CostReported = "reported"
	CostPriced   = "priced"
)

// Tokens is every token the usage counts (input, output, cache reads and writes);
// nil when none is known.
func (u *Usage) Tokens() *int64 {
	if u == nil {
		return nil
	}
	var sum int64
	known := false
	for _, p := range []*int64{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens} {
		if p != nil {
			sum += *p
			known = true
		}
	}
	if !known {
		return nil
	}
	return &sum
}

// Empty reports whether nothing at all is known.
func (u *Usage) Empty() bool {
	return u == nil || (u.Tokens() == nil && u.CostUSD == nil && u.Turns == nil && u.Model == "" && u.SessionID == "" && u.Note == "")
}

// PriceWith fills CostUSD from the token counts and the price prices give u.Model,
// unless the worker reported a cost (it wins). A model without a price leaves the
// cost nil and says so in Note.
func (u *Usage) PriceWith(prices []ModelPrice) {
	if u == nil || u.CostUSD != nil {
		if u != nil && u.CostUSD != nil && u.CostSource == "" {
			u.CostSource = CostReported
		}
		return
	}
	if u.Tokens() == nil {
		return
	}
	p, ok := PriceOf(prices, u.Model)
	if !ok {
		u.AddNote(fmt.Sprintf("no price for model %q: cost unknown", u.Model))
		return
	}
	cost := (float64(val(u.InputTokens))*p.InputPerMTok + float64(val(u.OutputTokens))*p.OutputPerMTok +
		float64(val(u.CacheReadTokens))*p.CacheReadPerMTok + float64(val(u.CacheWriteTokens))*p.CacheWritePerMTok) / 1e6
	cost = math.Round(cost*1e6) / 1e6
	u.CostUSD, u.CostSource, u.Price = &cost, CostPriced, &p
}

// AddNote appends s to u's note.
func (u *Usage) AddNote(s string) {
	if u.Note != "" {
		u.Note += "; "
	}
	u.Note += s
}

func val(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// Add returns the sum of u and o: each field known when either knows it. Model and
// session are u's unless empty. Source, Reported and Mismatch describe one
// attempt's usage against its worker's report, so a sum keeps u's: summing
// attempts (a task's total, a scorecard) reads Mismatch per attempt, not here.
func (u *Usage) Add(o *Usage) *Usage {
	if u == nil {
		return o
	}
	if o == nil {
		return u
	}
	sum := *u
	addI := func(a, b *int64) *int64 {
		if a == nil && b == nil {
			return nil
		}
		n := val(a) + val(b)
		return &n
	}
	sum.InputTokens, sum.OutputTokens = addI(u.InputTokens, o.InputTokens), addI(u.OutputTokens, o.OutputTokens)
	sum.CacheReadTokens, sum.CacheWriteTokens = addI(u.CacheReadTokens, o.CacheReadTokens), addI(u.CacheWriteTokens, o.CacheWriteTokens)
	if u.CostUSD != nil || o.CostUSD != nil {
		c := fval(u.CostUSD) + fval(o.CostUSD)
		sum.CostUSD = &c
		if (u.CostUSD == nil && u.Tokens() != nil) || (o.CostUSD == nil && o.Tokens() != nil) {
			sum.AddNote("part of the cost is unknown")
		}
	}
	if u.CostUSD == nil && o.CostUSD != nil {
		sum.CostSource, sum.Price = o.CostSource, o.Price
	} else if u.CostUSD != nil && o.CostUSD != nil && (u.CostSource != o.CostSource || u.Price != o.Price) {
		// A sum of differently charged parts has no one source or price.
		sum.CostSource, sum.Price = CostPriced, nil
		if u.CostSource == CostReported && o.CostSource == CostReported {
			sum.CostSource = CostReported
		}
	}
	if u.Turns != nil || o.Turns != nil {
		n := ival(u.Turns) + ival(o.Turns)
		sum.Turns = &n
	}
	if sum.Model == "" {
		sum.Model = o.Model
	}
	if sum.SessionID == "" {
		sum.SessionID = o.SessionID
	}
	if o.Note != "" {
		sum.AddNote(o.Note)
	}
	return &sum
}

func fval(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

func ival(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// ModelPrice prices one family of models in USD per million tokens. Pattern is a
// case-insensitive regular expression matched against the whole model name (the
// way Langfuse's model definitions match), so "claude-sonnet-4-5-20250929" finds the
// Sonnet 4.5 price.
type ModelPrice struct {
	Pattern           string  `json:"pattern" yaml:"pattern"`
	InputPerMTok      float64 `json:"input_per_mtok" yaml:"input_per_mtok"`
	OutputPerMTok     float64 `json:"output_per_mtok" yaml:"output_per_mtok"`
	CacheReadPerMTok  float64 `json:"cache_read_per_mtok" yaml:"cache_read_per_mtok"`
	CacheWritePerMTok float64 `json:"cache_write_per_mtok" yaml:"cache_write_per_mtok"`
}

// DefaultPrices are Anthropic's list prices (USD per million tokens; cache writes at
// the 5-minute rate), as Langfuse's model definitions carry them. The project rules'
// prices replace them when set.
func DefaultPrices() []ModelPrice {
	return []ModelPrice{
		{Pattern: `(anthropic/)?claude-opus-4-5.*`, InputPerMTok: 5, OutputPerMTok: 25, CacheReadPerMTok: 0.5, CacheWritePerMTok: 6.25},
		{Pattern: `(anthropic/)?claude-(opus-4|opus-4-1|3-opus).*`, InputPerMTok: 15, OutputPerMTok: 75, CacheReadPerMTok: 1.5, CacheWritePerMTok: 18.75},
		{Pattern: `(anthropic/)?claude-(sonnet-4|sonnet-4-5|3-7-sonnet|3-5-sonnet).*`, InputPerMTok: 3, OutputPerMTok: 15, CacheReadPerMTok: 0.3, CacheWritePerMTok: 3.75},
		{Pattern: `(anthropic/)?claude-haiku-4-5.*`, InputPerMTok: 1, OutputPerMTok: 5, CacheReadPerMTok: 0.1, CacheWritePerMTok: 1.25},
		{Pattern: `(anthropic/)?claude-3-5-haiku.*`, InputPerMTok: 0.8, OutputPerMTok: 4, CacheReadPerMTok: 0.08, CacheWritePerMTok: 1},
		{Pattern: `(anthropic/)?claude-3-haiku.*`, InputPerMTok: 0.25, OutputPerMTok: 1.25, CacheReadPerMTok: 0.03, CacheWritePerMTok: 0.3},
	}
}

// PriceOf returns the first price whose pattern matches model; false for an empty
// model or none matching. Patterns that do not compile match nothing (Validate
// refuses them before they are saved).
func PriceOf(prices []ModelPrice, model string) (ModelPrice, bool) {
	if strings.TrimSpace(model) == "" {
		return ModelPrice{}, false
	}
	for _, p := range prices {
		re, err := regexp.Compile(`(?i)^(?:` + p.Pattern + `)$`)
		if err == nil && re.MatchString(model) {
			return p, true
		}
	}
	return ModelPrice{}, false
}

// PricesProblem says what is wrong with a price table, "" when nothing is.
func PricesProblem(prices []ModelPrice) string {
	for i, p := range prices {
		if _, err := regexp.Compile(p.Pattern); err != nil || strings.TrimSpace(p.Pattern) == "" {
			return fmt.Sprintf("price %d: pattern %q is not a regular expression", i+1, p.Pattern)
		}
		for _, v := range []float64{p.InputPerMTok, p.OutputPerMTok, p.CacheReadPerMTok, p.CacheWritePerMTok} {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Sprintf("price %d (%s): prices must be zero or more", i+1, p.Pattern)
			}
		}
	}
	return ""
}

// Spend is what was used against a budget: the cost and tokens of finished attempts,
// and what running attempts reserved.
type Spend struct {
	CostUSD float64 `json:"cost_usd"`
	Tokens  int64   `json:"tokens"`
	// ReservedUSD and ReservedTokens are held by attempts still running.
	ReservedUSD    float64 `json:"reserved_usd,omitempty"`
	ReservedTokens int64   `json:"reserved_tokens,omitempty"`
	// Unpriced counts finished attempts whose cost is unknown (they cost nothing here).
	Unpriced int `json:"unpriced,omitempty"`
}

// SpendScope selects the attempts a budget counts: one task's, one goal's tasks', or
// one agent's; Since (when set) keeps those started at or after it.
type SpendScope struct {
	TaskID  int64
	GoalID  int64
	AgentID int64
	Since   time.Time
}

// Summary says in words what the usage knows: "1,200 in · 300 out · 5 cache read ·
// $0.0123 (priced) · 4 turns · claude-sonnet-4-5". Unknown parts are left out, and
// an unknown cost says so.
func (u *Usage) Summary() string {
	if u == nil {
		return ""
	}
	var parts []string
	for _, f := range []struct {
		n    *int64
		what string
	}{{u.InputTokens, "in"}, {u.OutputTokens, "out"}, {u.CacheReadTokens, "cache read"}, {u.CacheWriteTokens, "cache write"}} {
		if f.n != nil {
			parts = append(parts, contract.Thousands(*f.n)+" "+f.what)
		}
	}
	switch {
	case u.CostUSD != nil && u.CostSource == CostPriced:
		parts = append(parts, contract.USD(*u.CostUSD)+" (priced)")
	case u.CostUSD != nil:
		parts = append(parts, contract.USD(*u.CostUSD))
	case u.Tokens() != nil:
		parts = append(parts, "cost unknown")
	}
	if u.Turns != nil {
		parts = append(parts, fmt.Sprintf("%d turns", *u.Turns))
	}
	if u.Model != "" {
		parts = append(parts, u.Model)
	}
	return strings.Join(parts, " · ")
}

// Summary says what was spent: "$1.23 · 45,600 tokens", with what running attempts
// hold and how many attempts' cost is unknown.
func (s Spend) Summary() string {
	out := contract.USD(s.CostUSD) + " · " + contract.Thousands(s.Tokens) + " tokens"
	if s.ReservedUSD > 0 {
		out += " (" + contract.USD(s.ReservedUSD) + " held by a running attempt)"
	}
	if s.Unpriced > 0 {
		out += fmt.Sprintf("; %d attempt(s) of unknown cost", s.Unpriced)
	}
	return out
}
