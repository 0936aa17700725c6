package makefile

import "strings"

// Targets returns the explicit targets of a Makefile, sorted and each once: the
// targets of its rules as GNU make reads them (continued lines joined, define
// blocks and recipe lines not taken for rules, variables in a target list expanded
// with the values the file assigns them), leaving out special and other targets
// whose name starts with '.', pattern rules ('%') and target-specific variable
// lines. Conditionals are not evaluated, so a rule in any branch counts; a target
// list that cannot be worked out (a function, a computed name) contributes
// nothing. A file Parse cannot read has no targets.
func Targets(data []byte) []string {
	f, ok := Parse(data)
	if !ok {
		return nil
	}
	set := map[string]bool{}
	for i := range f.Lines {
		if f.Lines[i].Kind != Rule {
			continue
		}
		names, known := f.Candidates(i)
		if !known {
			continue
		}
		for _, t := range names {
			if t == "" || strings.HasPrefix(t, ".") || strings.Contains(t, "%") || strings.Contains(t, "$") {
				continue
			}
			set[t] = true
		}
	}
	return sortedKeys(set)
}
