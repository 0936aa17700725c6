package models

import (
	"fmt"
	"math"

	"github.com/countersign/countersign/models/contract"
)

// UsageMetered is Usage.Source for usage Countersign's model gateway counted from the
// provider's own responses; "" is usage the worker reported (its usage file, its
// stdout).
const UsageMetered = "metered"

// Tolerances of ReconcileUsage: a report within either of a metered figure is
// honest (providers round, and a CLI may count a call the gateway refused).
const (
	// UsageToleranceRatio is the relative difference allowed.
	UsageToleranceRatio = 0.05
	// UsageToleranceUSD is the absolute cost difference allowed.
	UsageToleranceUSD = 0.001
	// UsageToleranceTokens is the absolute token difference allowed.
	UsageToleranceTokens = 50
)

// ReconcileUsage returns the usage an attempt is charged when the gateway metered its
// calls: metered's figures, with what the worker reported kept beside them
// (Reported) and a difference beyond the tolerances named in Mismatch, which flags the
// attempt. Without metered usage (no gateway, or the worker made no call through it)
// the report is the usage, as before. A worker that reports nothing is not flagged:
// only a report that says something else.
func ReconcileUsage(metered, reported *Usage) *Usage {
	if metered == nil {
		return reported
	}
	out := *metered
	out.Source = UsageMetered
	if reported == nil || reported.Empty() {
		return &out
	}
	r := *reported
	r.Reported, r.Source, r.Mismatch = nil, "", ""
	out.Reported = &r
	out.Mismatch = usageMismatch(metered, &r)
	if out.Turns == nil {
		out.Turns = r.Turns // the gateway counts calls, not the agent's turns
	}
	if out.SessionID == "" {
		out.SessionID = r.SessionID
	}
	return &out
}

// usageMismatch says how reported differs from metered beyond the tolerances, or "".
func usageMismatch(metered, reported *Usage) string {
	if reported.CostUSD != nil && metered.CostUSD != nil && beyond(*reported.CostUSD, *metered.CostUSD, UsageToleranceUSD) {
		return fmt.Sprintf("the worker reported a cost of %s; the gateway metered %s", contract.USD(*reported.CostUSD), contract.USD(*metered.CostUSD))
	}
	rt, mt := reported.Tokens(), metered.Tokens()
	if rt == nil || mt == nil || !beyond(float64(*rt), float64(*mt), UsageToleranceTokens) {
		return ""
	}
	// OpenAI's usage counts cached input inside input_tokens, Anthropic's beside it: a
	// report in the OpenAI convention counts cache reads twice in this sum, and is as
	// honest as one in Anthropic's (where the cached part is within the input).
	if c, in := reported.CacheReadTokens, reported.InputTokens; c != nil && in != nil && *c <= *in &&
		!beyond(float64(*rt-*c), float64(*mt), UsageToleranceTokens) {
		return ""
	}
	return fmt.Sprintf("the worker reported %d tokens; the gateway metered %d", *rt, *mt)
}

// beyond reports whether got differs from want by more than both abs and
// UsageToleranceRatio of want.
func beyond(got, want, abs float64) bool {
	d := math.Abs(got - want)
	return d > abs && d > UsageToleranceRatio*math.Abs(want)
}
