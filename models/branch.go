package models

import (
	"regexp"
	"strings"
)

// branchRE is the shape of a branch name Countersign accepts: a stricter subset of
// git check-ref-format's, so that no name can be read as an option or a revision
// expression.
var branchRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$`)

// BranchNameProblem says what keeps s from being a branch name, or "": 1-200 letters,
// digits, '.', '_', '/' or '-', starting with a letter or digit, with no "..", "//",
// "/." or "@{", and not ending in "/", "." or ".lock".
func BranchNameProblem(s string) string {
	switch {
	case !branchRE.MatchString(s):
		return "must be 1-200 letters, digits, '.', '_', '/' or '-', starting with a letter or digit"
	case strings.Contains(s, "..") || strings.Contains(s, "//") || strings.Contains(s, "/.") || strings.Contains(s, "@{"):
		return `must not contain "..", "//", "/." or "@{"`
	case strings.HasSuffix(s, "/") || strings.HasSuffix(s, ".") || strings.HasSuffix(s, ".lock"):
		return `must not end in "/", "." or ".lock"`
	}
	return ""
}
