package evaluator

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// Bounds on what a command may report. A real evaluation is nowhere near them;
// they keep a buggy or talked-into-it command from overflowing a budget's sums or
// blocking every task with one absurd number.
const (
	maxReportedTokens  = 1e12
	maxReportedCostUSD = 1e4
	maxReportedModel   = 200
)

// messageUsage is what one Messages API reply says it spent, against model (the
// reply's model, else the one asked). Counts the reply leaves out stay nil; without
// a usage object at all only the model and a note are known. Cost is left to the
// runner's price table.
func messageUsage(msg *anthropic.Message, asked string) *models.Usage {
	u := &models.Usage{Model: string(msg.Model)}
	if u.Model == "" {
		u.Model = asked
	}
	if !msg.JSON.Usage.Valid() {
		u.Note = "the evaluator's API reply reported no usage"
		return u
	}
	mu := msg.Usage
	count := func(valid bool, n int64) *int64 {
		if !valid || n < 0 {
			return nil
		}
		return &n
	}
	u.InputTokens = count(mu.JSON.InputTokens.Valid(), mu.InputTokens)
	u.OutputTokens = count(mu.JSON.OutputTokens.Valid(), mu.OutputTokens)
	u.CacheReadTokens = count(mu.JSON.CacheReadInputTokens.Valid(), mu.CacheReadInputTokens)
	u.CacheWriteTokens = count(mu.JSON.CacheCreationInputTokens.Valid(), mu.CacheCreationInputTokens)
	return u
}

// commandUsage is the usage a command printed with its verdict, nil when it printed
// none that makes sense. Printed by `claude -p --output-format json`, the CLI's own
// "usage" and "total_cost_usd" count (the verdict inside its "result" is model text,
// no evidence of spending); otherwise the verdict object's "usage":
//
//	{"input_tokens": 1, "output_tokens": 1, "cache_read_input_tokens": 1,
//	 "cache_creation_input_tokens": 1, "cost_usd": 0.01, "model": "claude-haiku-4-5"}
//
// Every field is optional; one that is not what it should be (a negative or
// fractional count, a string for a number, an absurd value) is left out, never a
// failure: a verdict is worth more than its bookkeeping.
func commandUsage(objs *verdictObjects) *models.Usage {
	if objs == nil {
		return nil
	}
	var u *models.Usage
	if objs.wrapper != nil {
		u = readUsage(object(objs.wrapper["usage"]))
		if c, ok := readCost(objs.wrapper["total_cost_usd"]); ok && (u == nil || u.CostUSD == nil) {
			if u == nil {
				u = &models.Usage{}
			}
			u.CostUSD, u.CostSource = &c, models.CostReported
		}
	} else {
		u = readUsage(object(objs.verdict["usage"]))
	}
	if u.Empty() {
		return nil
	}
	return u
}

// readUsage reads a usage object; nil when it holds nothing usable.
func readUsage(m map[string]json.RawMessage) *models.Usage {
	if m == nil {
		return nil
	}
	u := &models.Usage{
		InputTokens:      readCount(m["input_tokens"]),
		OutputTokens:     readCount(m["output_tokens"]),
		CacheReadTokens:  readCount(m["cache_read_input_tokens"]),
		CacheWriteTokens: readCount(m["cache_creation_input_tokens"]),
	}
	if c, ok := readCost(m["cost_usd"]); ok {
		u.CostUSD, u.CostSource = &c, models.CostReported
	}
	var model string
	if json.Unmarshal(m["model"], &model) == nil {
		u.Model = contract.Truncate(strings.TrimSpace(model), maxReportedModel)
	}
	if u.Empty() {
		return nil
	}
	return u
}

// object decodes raw as a JSON object; nil when it is anything else.
func object(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// absent reports whether raw is missing or null: unknown, which must not decode to
// a zero.
func absent(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// readCount reads a token count: a JSON integer from 0 to maxReportedTokens, else nil.
func readCount(raw json.RawMessage) *int64 {
	var n int64
	if absent(raw) || json.Unmarshal(raw, &n) != nil || n < 0 || n > maxReportedTokens {
		return nil
	}
	return &n
}

// readCost reads a cost in USD: a JSON number from 0 to maxReportedCostUSD.
func readCost(raw json.RawMessage) (float64, bool) {
	var c float64
	if absent(raw) || json.Unmarshal(raw, &c) != nil || c < 0 || c > maxReportedCostUSD || math.IsNaN(c) {
		return 0, false
	}
	return c, true
}
