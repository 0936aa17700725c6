package checks

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/checks/testresults"
)

// A revision brief teaches the fix, not the answer: a worker told a held-out test's
// name, file, input or expected value can special-case it (feedback that reveals
// hidden tests raises cheating). So when a run holds held-out tests, what reaches the
// worker — the check's diagnosis and the criterion's error, from which the next brief
// is made — says how many held-out tests failed and nothing else about them; the
// failing tests the worker can see are still named. Everything held back goes to
// VerifyRequest.Withheld, for the people who may read held-out tests.

// heldOutNameRE finds the names of the tests a held-out file defines: Go test, fuzz
// and example functions (methods of a suite too), Python test functions and classes
// (pytest and unittest), and the descriptions of JavaScript test(), it() and
// describe() calls (with .only, .each and the like).
var heldOutNameRE = regexp.MustCompile("func\\s+(?:\\([^)]*\\)\\s*)?((?:Test|Fuzz|Example)\\w*)\\s*\\(" +
	"|def\\s+(test\\w*)\\s*\\(|class\\s+(Test\\w*)" +
	"|\\b(?:test|it|describe)(?:\\.\\w+)*\\s*\\(\\s*['\"`]([^'\"`]{1,200})['\"`]")

// Withholding says which tests of a run are held out: those a held-out file defines
// and those reported under a held-out file's name.
type Withholding struct {
	names []string // test names the held-out files define
	files []string // the held-out files' paths, base names and base names without extension
}

// NewWithholding reads the names of the tests the held-out files define; nil when
// there are no held-out tests.
func NewWithholding(heldOut []contract.HeldOutTest) *Withholding {
	if len(heldOut) == 0 {
		return nil
	}
	w := &Withholding{}
	for _, h := range heldOut {
		for _, m := range heldOutNameRE.FindAllStringSubmatch(h.Content, 500) {
			for _, n := range m[1:] {
				if n = strings.TrimSpace(n); n != "" {
					w.names = append(w.names, n)
				}
			}
		}
		p := path.Clean(h.Path)
		base := path.Base(p)
		w.files = append(w.files, p, base)
		if stem := strings.TrimSuffix(base, path.Ext(base)); len(stem) >= 4 {
			w.files = append(w.files, stem)
		}
	}
	return w
}

// Defines reports whether the test a result names (fully qualified: pkg.TestX,
// file::test_x, suite > case, TestX/sub) is a held-out one: its own name or a
// parent's is one a held-out file defines, or it is reported under a held-out file.
func (w *Withholding) Defines(full string) bool {
	if w == nil {
		return false
	}
	for _, n := range w.names {
		if full == n {
			return true
		}
		for _, sep := range []string{".", "::", " > ", "/", " "} {
			if strings.HasSuffix(full, sep+n) || strings.HasPrefix(full, n+sep) || strings.Contains(full, sep+n+sep) ||
				(sep != " " && strings.Contains(full, sep+n+"/")) {
				return true
			}
		}
	}
	return w.mentionsFile(full)
}

// Mentions reports whether text names a held-out file or a test one defines: a
// compiler error in a held-out file, an assertion quoting its test.
func (w *Withholding) Mentions(text string) bool {
	if w == nil {
		return false
	}
	for _, n := range w.names {
		if indexToken(text, n) >= 0 {
			return true
		}
	}
	return w.mentionsFile(text)
}

func (w *Withholding) mentionsFile(text string) bool {
	for _, f := range w.files {
		if indexToken(text, f) >= 0 {
			return true
		}
	}
	return false
}

// HeldOutFailed is the worker's word on failed held-out tests: their number only.
func HeldOutFailed(n int) string {
	return fmt.Sprintf("%d held-out test(s) failed (their names and inputs are withheld)", n)
}

// withheldFailures is failingTests as a worker may read it while held-out tests are
// in the run: the failed tests it can see, each with the first line of its message
// unless that line mentions a held-out test or file, then the number of held-out
// tests that failed.
func withheldFailures(rep testresults.Report, w *Withholding) string {
	var b strings.Builder
	shown, held := 0, 0
	for _, r := range rep.Results {
		if r.Status != testresults.StatusFail {
			continue
		}
		if w.Defines(r.Name) {
			held++
			continue
		}
		if shown++; shown > 20 {
			continue
		}
		msg, _, _ := strings.Cut(strings.TrimSpace(r.Message), "\n")
		switch {
		case w.Mentions(r.Name):
			fmt.Fprintf(&b, "- a test failed whose name mentions a held-out test (withheld)\n")
		case msg == "":
			fmt.Fprintf(&b, "- %s failed\n", r.Name)
		case w.Mentions(msg):
			fmt.Fprintf(&b, "- %s failed (its message mentions a held-out test and is withheld)\n", r.Name)
		default:
			fmt.Fprintf(&b, "- %s failed: %s\n", r.Name, quoteLine(msg, 200))
		}
	}
	if shown > 20 {
		fmt.Fprintf(&b, "… and %d more\n", shown-20)
	}
	// Failures the results do not list one by one (a truncated report) are counted in
	// Fail but named nowhere: they may be held out, so they are not called visible.
	if unlisted := rep.Fail - shown - held; unlisted > 0 {
		fmt.Fprintf(&b, "%d more failed test(s) are not listed in the results\n", unlisted)
	}
	if held > 0 {
		b.WriteString(HeldOutFailed(held) + "\n")
	}
	return fmt.Sprintf("%d test(s) failed:\n%s", rep.Fail, b.String())
}

// withoutTestCache switches off pytest's cache for a run that holds held-out tests:
// it would write their node ids (file and name) into .pytest_cache/v/cache/lastfailed
// in the workspace, where the worker's next attempt reads them. Other runners' caches
// live in the run's own temp dir or home (Go's build cache: see docs/judge-environment.md).
func withoutTestCache(env []string) []string {
	const key = "PYTEST_ADDOPTS="
	out := make([]string, 0, len(env)+1)
	opts := "-p no:cacheprovider"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key); ok {
			opts = strings.TrimSpace(v + " " + opts)
			continue
		}
		out = append(out, kv)
	}
	return append(out, key+opts)
}
