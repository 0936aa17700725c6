package models

import (
	"time"

	"github.com/countersign/countersign/models/contract"
)

// ProjectRules are the project's editable rules: what contract generation uses
// (contract.Rules: activities, file patterns, stacks, words) and the governance rules
// beside it (prices, the advisory prompt, hats). Both are saved and edited as one.
type ProjectRules struct {
	contract.Rules `yaml:",inline"`
	// Prices are what attempts are charged per model (DefaultPrices when empty).
	Prices []ModelPrice `json:"prices,omitempty" yaml:"prices,omitempty"`
	// PromptForAdvisory makes every advisory task wait in the inbox before it is
	// delegated (see the advisory prompt rule); off, only ambiguous or multi-step
	// advisory tasks wait.
	PromptForAdvisory bool `json:"prompt_for_advisory" yaml:"prompt_for_advisory,omitempty"`
	// Hats are the roles people and agents wear on one task and which of them may
	// not be worn by the same participant (see Hat); empty means DefaultHats.
	Hats      []Hat     `json:"hats,omitempty" yaml:"hats,omitempty"`
	UpdatedAt time.Time `json:"updated_at" yaml:"-"`
}

// DefaultRules returns the rules used until a project saves its own: the default
// generation rules (contract.DefaultRules), with no prices and no hats of their own
// (DefaultPrices and DefaultHats apply).
func DefaultRules() ProjectRules { return ProjectRules{Rules: contract.DefaultRules()} }

// Validate checks the rules and returns an EINVALID error keyed by field: prices,
// hats[0].name, and the generation rules' keys (contract.Rules.Validate).
func (r ProjectRules) Validate() error {
	var fe FieldErrors
	if msg := PricesProblem(r.Prices); msg != "" {
		fe.Add("prices", msg)
	}
	ValidateHats(r.Hats, &fe)
	r.Rules.Check(&fe)
	return fe.Err()
}
