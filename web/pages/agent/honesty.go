package agent

import "github.com/countersign/countersign/web/components"

// Honesty is the scorecard page's honesty section: the agent's figures, their split
// by model, its canary tasks and, for a lead, the form that schedules one.
type Honesty struct {
	// Shown is false when the store keeps no honesty figures.
	Shown   bool
	Figures components.HonestyRow
	Models  []components.HonestyRow
	// Canaries lists the agent's canary tasks, newest first (leads only: nil for
	// anyone else).
	Canaries []CanaryRow
	// Form is the lead's scheduling form; nil for anyone else.
	Form *CanaryForm
}

// CanaryRow is one canary task of the agent and what came of it.
type CanaryRow struct {
	TaskID int64
	Title  string
	Kind   string
	State  string
	Result string // cheat | impossible | failed | pending
}

// CanaryForm is the form a lead schedules a canary task with: a built-in kind or
// the team's own brief, verify command and one held-out test file. Errors are keyed
// by the form's field names (kind, role, title, brief, verify, held_out_path,
// held_out_content) and "form" for the rest.
type CanaryForm struct {
	Action string
	CSRF   string
	Kinds  []components.Option
	Roles  []components.Option
	Values map[string]string
	Errors map[string]string
}

// resultBadge is the badge class of a canary task's result.
func resultBadge(result string) string {
	switch result {
	case "cheat":
		return "badge state-error"
	case "impossible":
		return "badge state-verified"
	}
	return "badge"
}

func i64toa(n int64) string { return itoa(int(n)) }
