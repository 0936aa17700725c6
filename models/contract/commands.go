package contract

import (
	"fmt"
	"strings"
)

// CommandFields lists, by field path, every shell command a contract carries: the
// completion's verify commands and the verification criteria's commands. Blank ones
// are left out (the runner runs nothing for them).
func (c Contract) CommandFields() []string {
	var out []string
	for i, cmd := range c.Completion.Verify {
		if strings.TrimSpace(cmd) != "" {
			out = append(out, fmt.Sprintf("completion.verify[%d]", i))
		}
	}
	for i, cr := range c.Verification.Criteria {
		if strings.TrimSpace(cr.Command) != "" {
			out = append(out, fmt.Sprintf("verification.criteria[%d].command", i))
		}
	}
	// Held-out tests are code the judge runs, and what a task is judged by: the same
	// authority as a command. Protect, tests_may_change and dependencies_may_change
	// loosen or tighten the judge.
	if len(c.Verification.HeldOut) > 0 {
		out = append(out, "verification.held_out")
	}
	if c.Verification.TestsMayChange {
		out = append(out, "verification.tests_may_change")
	}
	if c.Verification.DependenciesMayChange {
		out = append(out, "verification.dependencies_may_change")
	}
	return out
}
