package contract

// What a review does when its last round fails (Review.OnExhausted).
const (
	// OnExhaustedBlock, the default, blocks the task with stage review and the last
	// findings, for a person.
	OnExhaustedBlock = "block"
	// OnExhaustedProceed lets the task pass with the outstanding findings appended to
	// it as warnings (Task.ReviewWarnings), shown on its page.
	OnExhaustedProceed = "proceed_with_warnings"
)

// RuleReviewOnExhausted refuses a review whose on_exhausted is neither block nor
// proceed_with_warnings.
const RuleReviewOnExhausted = "review_on_exhausted"

// validOnExhausted checks a review's on_exhausted ("" is the default, block).
func validOnExhausted(v string, fe *FieldErrors) {
	switch v {
	case "", OnExhaustedBlock, OnExhaustedProceed:
	default:
		fe.Add("review.on_exhausted", "must be block or proceed_with_warnings (rule "+RuleReviewOnExhausted+")")
	}
}

// ProceedsWithWarnings reports whether the review lets the task pass with warnings
// once its rounds run out.
func (r *Review) ProceedsWithWarnings() bool {
	return r != nil && r.OnExhausted == OnExhaustedProceed
}
