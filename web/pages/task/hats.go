package task

import "strings"

// HatWearer is one participant of a task and the hats they wore on it (builder,
// reviewer, tester, pilot, and hats their roles declare).
type HatWearer struct {
	Agent string
	Hats  []string
}

// Label is "bob: builder, tester".
func (h HatWearer) Label() string { return h.Agent + ": " + strings.Join(h.Hats, ", ") }
