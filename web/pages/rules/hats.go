package rules

// HatRow is one hat of the hat table as typed: its name and the hats it conflicts
// with, comma-separated.
type HatRow struct {
	Name          string
	ConflictsWith string
}
