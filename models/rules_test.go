package models

import (
	"slices"
	"testing"

	"github.com/countersign/countersign/models/contract"
)

func TestRulesChangedNamesStacks(t *testing.T) {
	before, after := DefaultRules(), DefaultRules()
	after.Stacks[1].Commands[0].Command = "pnpm test --silent"
	after.Stacks = slices.Delete(after.Stacks, 3, 4) // rust
	after.Stacks = append(after.Stacks, contract.Stack{Name: "elixir", Detect: []contract.Condition{{File: "mix.exs"}}, Commands: []contract.StackCommand{{Activity: "unit-test", Command: "mix test"}}})
	if got := rulesFieldsChanged(&before, &after); !slices.Equal(got, []string{"stacks.node", "stacks.elixir", "stacks.rust"}) {
		t.Fatalf("%q", got)
	}
}
