package contract

import (
	"regexp"
	"unicode/utf8"
)

// roleRE is the grammar of a role name, which a contract's review names.
var roleRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// ValidRole reports whether s is a well-formed role name: 1-32 lower-case letters,
// digits, '_' or '-', starting with a letter or digit. Agents, steps and reviews all
// name roles with it.
func ValidRole(s string) bool { return roleRE.MatchString(s) }

// Truncate shortens s to at most n bytes, cutting at a rune boundary and marking the
// cut with "…", so that text from workers stays valid UTF-8 (PostgreSQL refuses
// anything else).
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := max(n-len(mark), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

func quote(s string) string { return "\"" + s + "\"" }
