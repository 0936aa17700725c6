// Package glob is the one glob matcher. Its grammar is path.Match's: '*' is any
// run of characters but the separator, '?' any one of them, '[…]' a class and '\'
// escapes; a path adds "**" as a whole segment for any number of segments.
// Match reads one name, MatchPath a protect rule against a workspace path, and
// MatchTask an npm-run-all task pattern against a script name: the same grammar,
// each with the separator its tool uses. One difference from git and the shell is
// kept from path.Match: a class is negated with '^' ("[^a]"); "[!a]" is the class
// of '!' and 'a'. Its importers: the contract code (models/contract: protect
// rules) and the judge (runner/judge, runner/judge/fileparts: protected paths,
// npm-run-all patterns); models/formats/onehome_test.go forbids a second matcher.
package glob

import (
	"path"
	"strings"
)

// Match reports whether name matches pattern, '*' not crossing a slash. A
// malformed pattern matches nothing.
func Match(pattern, name string) bool {
	ok, _ := path.Match(pattern, name)
	return ok
}

// Valid reports whether pattern is well-formed in Match's grammar.
func Valid(pattern string) bool {
	_, err := path.Match(pattern, "")
	return err == nil
}

// MatchPath reports whether rel (slash-separated, relative to the workspace)
// matches glob. A glob without a slash matches a base name at any depth
// ("*_test.go", "conftest.py"); otherwise it matches the whole path, "**" standing
// for any number of directories ("tests/**" is everything below tests,
// "**/*.test.*" any such file at any depth). A glob starting with "/" is anchored at
// the workspace root and matches the whole path: "/run.sh" is run.sh at the root
// and no other.
func MatchPath(glob, rel string) bool {
	if anchored, ok := strings.CutPrefix(glob, "/"); ok {
		return anchored != "" && matchSegments(strings.Split(anchored, "/"), strings.Split(rel, "/"), Match)
	}
	if !strings.Contains(glob, "/") {
		return Match(glob, path.Base(rel))
	}
	return matchSegments(strings.Split(glob, "/"), strings.Split(rel, "/"), Match)
}

// MatchTask reports whether an npm-run-all task pattern ("lint:*", "test:**")
// matches a script name the way npm-run-all reads it (minimatch, with ':' and '/'
// swapped): ':' separates segments and '/' is a plain character, "**" is any
// number of segments (at the end, at least one), and no wildcard matches a
// segment's leading '.' unless the pattern's segment starts with one. A pattern
// segment minimatch cannot read as a glob (an unclosed '[') matches itself.
func MatchTask(pattern, name string) bool {
	swap := strings.NewReplacer(":", "/", "/", ":")
	pat, n := strings.Split(swap.Replace(pattern), "/"), strings.Split(swap.Replace(name), "/")
	return matchSegments(pat, n, func(p, s string) bool {
		if strings.HasPrefix(s, ".") && !strings.HasPrefix(p, ".") {
			return false
		}
		ok, err := path.Match(p, s)
		if err != nil {
			return p == s
		}
		return ok
	})
}

// matchSegments matches a pattern's segments against a name's, "**" standing for
// any number of them (at least one when it ends the pattern).
func matchSegments(pat, name []string, seg func(p, s string) bool) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			if len(rest) == 0 {
				return len(name) > 0 && allSegments(name, seg)
			}
			for i := 0; i <= len(name); i++ {
				if matchSegments(rest, name[i:], seg) {
					return true
				}
				if i < len(name) && !seg("*", name[i]) {
					return false // "**" does not cross this segment
				}
			}
			return false
		}
		if len(name) == 0 || !seg(pat[0], name[0]) {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// allSegments reports whether "**" may stand for every segment of name.
func allSegments(name []string, seg func(p, s string) bool) bool {
	for _, s := range name {
		if !seg("*", s) {
			return false
		}
	}
	return true
}
