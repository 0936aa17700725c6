package components

// ModelSpendProps is the model gateway's spend per agent per day over a window, for
// people.
type ModelSpendProps struct {
	// TestID names the section (data-testid); each row is TestID-<day>-<agent>.
	TestID string
	Days   int
	// Total sums the window: "$1.23 · 45,600 tokens".
	Total string
	// Rows are newest day first.
	Rows []ModelSpendRow
}

// ModelSpendRow is one agent's metered spend on one UTC day.
type ModelSpendRow struct {
	Day    string // "2 Jan"
	DayKey string // "2006-01-02"
	Agent  string
	Href   string // the agent's scorecard; "" for no link
	Cost   string
	Tokens string
	// Attempts counts the metered attempts; Note says how many cost is unknown and
	// how many were flagged for a usage mismatch.
	Attempts int
	Note     string
}
