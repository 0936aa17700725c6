package inbox

// AdvisoryPrompt is an advisory task held before delegation: why it waits, the
// criteria generation suggests for making it verifiable, and the forms that resolve
// it (proceed as advisory, make verifiable, cancel) for those who may.
type AdvisoryPrompt struct {
	Reasons []string // in words
	Forms   []Form   // Action advisory-proceed, advisory-make_verifiable, advisory-cancel
}

// advisoryCriteriaForm names the form that takes criteria.
const advisoryCriteriaForm = "advisory-make_verifiable"
