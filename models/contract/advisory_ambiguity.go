package contract

import "slices"

// AdvisoryAmbiguous reports whether a task's words carry both an advisory signal and a
// verifiable one, so that classifying it as advisory is a guess a person should
// confirm (the advisory prompt; see AdvisoryPromptReasons). The advisory signal is an
// advisory word anywhere in the title or description (the rules' AdvisoryWords, in
// their common forms, as Classify matches them). A verifiable signal is any of:
//   - a code file expected (given in files or named in the text; documentation files
//     do not count);
//   - an implementation verb (add, fix, implement, …) leading the title;
//   - an implementation verb right after "and" or "then" ("investigate and fix the
//     timeout").
//
// It does not classify: Classify decides the type, this only says how sure the words
// let it be. Pure and cheap, like Classify.
func AdvisoryAmbiguous(title, description string, files []string, rules Rules) bool {
	tt := scanTaskText(title, description)
	all := dedupStrings(append(slices.Clip(files), tt.files...))
	adv := newWordMatcher(rules.AdvisoryWords)
	advisory := false
	for i := range tt.words {
		if adv.matchAt(tt.words, i) {
			advisory = true
			break
		}
	}
	if !advisory {
		return false
	}
	for _, f := range all {
		if !isDocFile(f) {
			return true
		}
	}
	if tt.lead >= 0 && implementationVerbs[tt.words[tt.lead]] && !adv.matchAt(tt.words, tt.lead) {
		return true
	}
	for i := 1; i < len(tt.words); i++ {
		if (tt.words[i-1] == "and" || tt.words[i-1] == "then") && implementationVerbs[tt.words[i]] && !adv.matchAt(tt.words, i) {
			return true
		}
	}
	return false
}
