package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/workspace"
)

// Environment variables about usage and budgets every worker gets.
const (
	// EnvUsageFile names a file the worker may write its usage to: JSON in the shape of
	// Claude Code's final result message (see readUsageFile), every field optional.
	EnvUsageFile = "COUNTERSIGN_USAGE_FILE"
	// EnvBudgetUSD is what the attempt may spend, in USD, when a budget caps it: the
	// claude preset passes it as --max-budget-usd.
	EnvBudgetUSD = "COUNTERSIGN_BUDGET_USD"
	// EnvPermissionMode is bypassPermissions for confined workers (the sandbox is the
	// fence) and absent otherwise: the claude preset's --permission-mode.
	EnvPermissionMode = "COUNTERSIGN_PERMISSION_MODE"
)

// maxUsageFile bounds the usage file the runner reads: a result message is small.
const maxUsageFile = 64 << 10

// usageEnv is the worker's environment about usage and budgets, and the variables
// its agent passes by name from the runner's environment (values never stored).
func (p *confiner) usageEnv(tr *taskRun, ar *attemptRun) []string {
	env := []string{EnvUsageFile + "=" + filepath.Join(ar.tmp, usageFileName)}
	if r := ar.reserve.ReserveUSD; r != nil {
		env = append(env, EnvBudgetUSD+"="+strconv.FormatFloat(*r, 'f', 4, 64))
	}
	if p.cfg.Sandbox != nil && p.cfg.Sandbox.Enabled() && p.cfg.Sandbox.Ready() {
		// IS_SANDBOX tells Claude Code it runs in a sandbox, where it accepts
		// bypassPermissions even as root (the runner's user on many hosts).
		env = append(env, EnvPermissionMode+"=bypassPermissions", "IS_SANDBOX=1")
	}
	for _, name := range tr.agent.PassEnv {
		if p.gatewayPort() != 0 && slices.Contains(providerVars, name) {
			continue // the gateway holds the key
		}
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// usageFileName is the usage file's name in the attempt's private directory.
const usageFileName = "usage.json"

// readUsageFile reads what the worker wrote to its usage file: nil when it wrote
// none. The file is the worker's, so it is opened beneath the attempt's directory
// without following links, bounded, and anything that is not a usage message becomes
// a note on the attempt, never a failure.
func readUsageFile(dir string) *models.Usage {
	f, err := workspace.OpenRegularBeneath(dir, usageFileName)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &models.Usage{Note: "the usage file could not be read: it must be a regular file"}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxUsageFile+1))
	if err != nil {
		return &models.Usage{Note: "the usage file could not be read"}
	}
	if len(b) > maxUsageFile {
		return &models.Usage{Note: fmt.Sprintf("the usage file is over %d KiB: ignored", maxUsageFile>>10)}
	}
	u, err := parseUsage(b)
	if err != nil {
		return &models.Usage{Note: "the usage file is not a usage message: " + err.Error()}
	}
	return u
}

// usageMessage is Claude Code's final result message, as far as usage goes.
type usageMessage struct {
	Usage *struct {
		InputTokens      *int64 `json:"input_tokens"`
		OutputTokens     *int64 `json:"output_tokens"`
		CacheReadTokens  *int64 `json:"cache_read_input_tokens"`
		CacheWriteTokens *int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
	TotalCostUSD *float64 `json:"total_cost_usd"`
	NumTurns     *int     `json:"num_turns"`
	SessionID    string   `json:"session_id"`
	Model        string   `json:"model"`
}

// parseUsage reads a usage message; negative counts are refused.
func parseUsage(b []byte) (*models.Usage, error) {
	var m usageMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, errors.New("not a JSON object with usage fields")
	}
	u := &models.Usage{CostUSD: m.TotalCostUSD, Turns: m.NumTurns,
		SessionID: contract.Truncate(m.SessionID, 200), Model: contract.Truncate(m.Model, 200)}
	if m.Usage != nil {
		u.InputTokens, u.OutputTokens = m.Usage.InputTokens, m.Usage.OutputTokens
		u.CacheReadTokens, u.CacheWriteTokens = m.Usage.CacheReadTokens, m.Usage.CacheWriteTokens
	}
	for _, n := range []*int64{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens} {
		if n != nil && *n < 0 {
			return nil, errors.New("a token count is negative")
		}
	}
	if (u.CostUSD != nil && *u.CostUSD < 0) || (u.Turns != nil && *u.Turns < 0) {
		return nil, errors.New("a cost or turn count is negative")
	}
	if u.CostUSD != nil {
		u.CostSource = models.CostReported
	}
	return u, nil
}

// prices is the price table attempts are charged with: the project rules' own, or
// the defaults.
func prices(rules models.ProjectRules) []models.ModelPrice {
	if len(rules.Prices) > 0 {
		return rules.Prices
	}
	return models.DefaultPrices()
}

// priceUsage gives the attempt's usage a cost from the price table when the worker
// reported tokens but no cost; the price charged is kept with it.
func (p *settler) priceUsage(ctx context.Context, tx models.Tx, ar *attemptRun) error {
	if ar.usage == nil || ar.usage.CostUSD != nil || ar.usage.Tokens() == nil {
		return nil
	}
	rules, err := p.rulesIn(ctx, tx)
	if err != nil {
		return err
	}
	ar.usage.PriceWith(prices(rules))
	return nil
}

// addEvaluatorUsage adds what an evaluator call used to the attempt's usage (nil: a
// cached verdict, nothing spent). Each side is priced with its own model first: the
// sum keeps the worker's model.
func (p *checker) addEvaluatorUsage(ctx context.Context, ar *attemptRun, u *models.Usage) {
	if u == nil {
		return
	}
	if rules, err := p.rules(ctx); err == nil {
		ar.usage.PriceWith(prices(rules))
		u.PriceWith(prices(rules))
	}
	ar.usage = ar.usage.Add(u)
}
