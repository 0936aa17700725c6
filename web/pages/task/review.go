package task

// Review is what the artifact review left on the task: the warnings of a review whose
// rounds ran out under proceed_with_warnings, and for a review's fix task the task it
// fixes. Nil when neither.
type Review struct {
	Warnings string
	FixOf    int64 // the reviewed task, on a fix task; 0 otherwise
}

// ReviewOf builds the review card's model; nil when there is nothing to show.
func ReviewOf(warnings string, fixOf *int64) *Review {
	if warnings == "" && fixOf == nil {
		return nil
	}
	r := &Review{Warnings: warnings}
	if fixOf != nil {
		r.FixOf = *fixOf
	}
	return r
}
