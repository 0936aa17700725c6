package testresults

import (
	"path"
	"regexp"
	"sort"
	"strings"
)

// The names a test file defines, per language, read from its source: what the judge
// looks for in a run's results for a held-out file.
var (
	// goTestRE: Go test functions (TestMain is the package's entry point, not a test).
	goTestRE = regexp.MustCompile(`(?m)^func\s+(Test[A-Za-z0-9_]*)\s*\(\s*\w+\s+\*testing\.T\s*\)`)
	// pyTestRE: pytest functions and methods.
	pyTestRE = regexp.MustCompile(`(?m)^\s*(?:async\s+)?def\s+(test\w*)\s*\(`)
	// jsTestRE: the descriptions of test()/it() calls (node --test, jest, vitest, mocha).
	jsTestRE = regexp.MustCompile("\\b(?:test|it)(?:\\.only)?\\s*\\(\\s*['\"`]([^'\"`\\n]{1,200})['\"`]")
)

// maxDefinedNames bounds the names read from one file.
const maxDefinedNames = 500

// DefinedTests returns the names of the tests a test file defines, by its extension:
// Go test functions, pytest functions, and the descriptions of test()/it() calls in
// JavaScript and TypeScript. A file of another language gives none.
func DefinedTests(file, source string) []string {
	var re *regexp.Regexp
	switch ext := path.Ext(file); ext {
	case ".go":
		re = goTestRE
	case ".py":
		re = pyTestRE
	case ".js", ".cjs", ".mjs", ".jsx", ".ts", ".cts", ".mts", ".tsx":
		re = jsTestRE
	default:
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(source, maxDefinedNames) {
		if n := m[1]; n != "" && n != "TestMain" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// Defines reports whether a result's fully qualified name full is the test name (as
// DefinedTests reads it) or one of its subtests or parameter cases: name is its last
// element (pkg.TestX, file::test_x, suite > case, file.case) or the parent of a
// subtest (pkg.TestX/sub) or case (mod.test_x[1]).
func Defines(name, full string) bool {
	if full == name || strings.HasPrefix(full, name+"/") || strings.HasPrefix(full, name+"[") {
		return true
	}
	for _, sep := range []string{".", "::", " > ", "/"} {
		if strings.HasSuffix(full, sep+name) || strings.Contains(full, sep+name+"/") || strings.Contains(full, sep+name+"[") {
			return true
		}
	}
	return false
}

// NotRun returns the names, sorted, that no report shows run: no result they define
// passed or failed (skipped ones did not run). A test that the code under test
// stopped from running (it narrowed the selection at start-up, or the run ended
// early) is named here even though nothing failed.
func NotRun(names []string, reports ...Report) []string {
	var out []string
	for _, n := range names {
		if !ran(n, reports) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func ran(name string, reports []Report) bool {
	for _, rep := range reports {
		for _, r := range rep.Results {
			if r.Status != StatusSkip && Defines(name, r.Name) {
				return true
			}
		}
	}
	return false
}
