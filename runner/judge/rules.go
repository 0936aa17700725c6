package judge

import (
	"strings"

	"github.com/countersign/countersign/models/formats/glob"
)

// Rule is one protect pattern: a glob relative to the workspace, and optionally a
// part of the files it matches ("scripts" of package.json, "targets" of a Makefile,
// "[tool.pytest]" of a TOML file) when only that part is protected.
type Rule struct {
	Glob string
	Part string
}

// ParseRules reads protect patterns ("*_test.go", "tests/**", "package.json#scripts"),
// dropping blanks and repeats. Patterns are validated where they are stored
// (models.ProjectRules and contracts); one that cannot match is simply inert here.
func ParseRules(patterns []string) []Rule {
	var out []Rule
	seen := map[Rule]bool{}
	for _, p := range patterns {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		glob, part, _ := strings.Cut(p, "#")
		r := Rule{Glob: strings.TrimPrefix(strings.TrimSpace(glob), "./"), Part: strings.TrimSpace(part)}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// Match reports whether rel (slash-separated, relative to the workspace) matches the
// rule's glob. A glob without a slash matches a base name at any depth
// ("*_test.go", "conftest.py"); otherwise it matches the whole path, "**" standing
// for any number of directories ("tests/**" is everything below tests,
// "**/*.test.*" any such file at any depth). A glob starting with "/" is anchored at
// the workspace root and matches the whole path: "/run.sh" is run.sh at the root and
// no other (the exact paths fileparts.FilesRun returns).
func (r Rule) Match(rel string) bool { return glob.MatchPath(r.Glob, rel) }

// classify reports whether rel is protected whole by one of rules, and otherwise the
// partial rules that match it.
func classify(rules []Rule, rel string) (whole bool, parts []Rule) {
	for _, r := range rules {
		if !r.Match(rel) {
			continue
		}
		if r.Part == "" {
			return true, nil
		}
		parts = append(parts, r)
	}
	return false, parts
}

// BlockedError says a protected path could not be restored because the worker put a
// symbolic link or a file where a directory on its way was: the judge follows no
// link and removes no directory of the worker's, so the attempt cannot be judged, which
// is the worker's doing.
type BlockedError struct {
	Path string
	// Reason, when set, says what else made the path unsafe to apply (a path that
	// climbs out of the view); the message is then about it.
	Reason string
}

func (e *BlockedError) Error() string {
	if e.Reason != "" {
		return "the change to " + e.Path + " cannot be applied safely: " + e.Reason
	}
	return "the worker replaced the directory " + e.Path + " with a symbolic link or a file, so the protected files below it cannot be restored"
}
