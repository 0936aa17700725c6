package models

// Hat is a role a participant wears on one task (builder, tester, reviewer, …) and
// the hats the same participant may not also wear on that task.
type Hat struct {
	Name          string   `json:"name" yaml:"name"`
	ConflictsWith []string `json:"conflicts_with,omitempty" yaml:"conflicts_with,omitempty"`
}
