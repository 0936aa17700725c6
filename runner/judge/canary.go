package judge

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/checks/testresults"
)

// EnvCanary is set, for the structured-results commands only, to the run's nonce. The
// must-fail canary fails only where it is set, so that a plain verify command that
// runs the same tests (go test ./...) is not failed by it; a run that unsets it
// reports the must-fail canary skipped, which Check calls tampering like any other.
const EnvCanary = "COUNTERSIGN_CANARY"

// Canaries is the judge-made canary pair of one judged run of one test runner: a test
// that must fail and one that must pass, named afresh per run. The code under test
// runs inside the same test run; if it forges the results wholesale (a conftest hook
// that turns failures into passes, a TestMain that prints passes and exits 0, a
// reporter patched to say "ok"), the must-fail canary is reported passing or missing.
// It does not stop code that reads the canary's file and spares it: it catches
// forgery that does not know it is being watched.
type Canaries struct {
	// Kind is the runner's canary (models.Canary*); "" when this run carries none.
	Kind string `json:"kind,omitempty"`
	// Nonce is the run's fresh random part of the names (and EnvCanary's value).
	Nonce string `json:"nonce,omitempty"`
	// Fail and Pass are the tests' names as every runner's results hold them: a
	// reported name contains one of them exactly when it is that canary.
	Fail string `json:"fail,omitempty"`
	Pass string `json:"pass,omitempty"`
	// Reason says why the run carries no canary, when Kind is "".
	Reason string `json:"reason,omitempty"`
}

// NewNonce returns a fresh nonce for a run's canaries: 16 hex digits from
// crypto/rand, so that no worker can know a run's canary names in advance.
func NewNonce() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("judge: crypto/rand failed: " + err.Error()) // never on Linux ≥ 3.17
	}
	return hex.EncodeToString(b[:])
}

// NewCanaries writes nothing: it returns the canary files that the judge adds to its
// view for a run of the test runner res describes, and the Canaries that Check holds
// the run's results to. root is the judge's view (it reads the Go package clause and
// package.json's "type" there); testFiles are the protected and held-out test files
// (relative to root), beside the shallowest of which the canary goes, where the
// runner collects. A runner that carries no canary, or a workspace with no place for
// one, gives no files and a Canaries whose Reason says why.
func NewCanaries(nonce string, res contract.TestResults, root string, testFiles []string) ([]File, Canaries) {
	c := Canaries{Kind: res.Canary, Nonce: nonce}
	if c.Kind == "" {
		return nil, Canaries{Reason: fmt.Sprintf("the %s results of %q carry no canary", res.Format, res.Command)}
	}
	var f File
	var ok bool
	switch c.Kind {
	case contract.CanaryGo:
		f, ok = goCanary(&c, root, testFiles)
	case contract.CanaryPytest:
		f, ok = pytestCanary(&c, testFiles)
	case contract.CanaryNodeTest, contract.CanaryJest, contract.CanaryVitest, contract.CanaryMocha:
		f, ok = jsCanary(&c, root, testFiles)
	default:
		return nil, Canaries{Reason: "unknown canary kind " + c.Kind}
	}
	if !ok {
		return nil, Canaries{Reason: fmt.Sprintf("no %s test file to put the canary beside", c.Kind)}
	}
	return []File{f}, c
}

// shallowest returns the directory of the least deep of files that keep says is a
// test file of the runner, "" when none is.
func shallowest(files []string, keep func(rel string) bool) (string, string, bool) {
	var cand []string
	for _, f := range files {
		f = path.Clean(filepath.ToSlash(f))
		if keep(f) && !strings.HasPrefix(f, "../") {
			cand = append(cand, f)
		}
	}
	if len(cand) == 0 {
		return "", "", false
	}
	sort.Slice(cand, func(i, j int) bool {
		di, dj := strings.Count(cand[i], "/"), strings.Count(cand[j], "/")
		if di != dj {
			return di < dj
		}
		return cand[i] < cand[j]
	})
	return path.Dir(cand[0]), cand[0], true
}

// skippedDir reports whether a path lies where go test ./... does not look
// (testdata, vendor, a directory starting with "." or "_"), or, for goSkips false,
// where a JS runner does not (node_modules, a directory starting with ".").
func skippedDir(rel string, goSkips bool) bool {
	for _, seg := range strings.Split(path.Dir(rel), "/") {
		switch {
		case seg == ".":
		case seg == "node_modules" || strings.HasPrefix(seg, "."):
			return true
		case goSkips && (seg == "testdata" || seg == "vendor" || strings.HasPrefix(seg, "_")):
			return true
		}
	}
	return false
}

// maxSniff bounds what is read of a file to learn its package clause or type.
const maxSniff = 64 << 10

// sniff reads the first maxSniff bytes of root/rel, "" when it cannot.
func sniff(root, rel string) string {
	f, err := os.Open(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, maxSniff)
	n, _ := f.Read(b)
	return string(b[:n])
}

var goPackageRE = regexp.MustCompile(`(?m)^package\s+([A-Za-z_][A-Za-z0-9_]*)`)

// goCanary puts zz_countersign_canary_<nonce>_test.go in the package of the
// shallowest Go test file, with that file's package clause.
func goCanary(c *Canaries, root string, testFiles []string) (File, bool) {
	// The shallowest test file on disk whose package clause reads (a held-out file is
	// not in the workspace yet).
	var dir string
	var m []string
	for left := testFiles; m == nil; {
		d, file, ok := shallowest(left, func(rel string) bool {
			return strings.HasSuffix(rel, "_test.go") && !skippedDir(rel, true)
		})
		if !ok {
			return File{}, false
		}
		dir, m = d, goPackageRE.FindStringSubmatch(sniff(root, file))
		left = slices.DeleteFunc(slices.Clone(left), func(f string) bool { return path.Clean(filepath.ToSlash(f)) == file })
	}
	id := "TestCountersignCanary" + c.Nonce
	c.Fail, c.Pass = id+"MustFail", id+"MustPass"
	src := fmt.Sprintf(`// The judge's canary (Countersign): written for one judged run and removed after it.
package %s

import (
	"os"
	"testing"
)

func %s(t *testing.T) {
	if os.Getenv(%q) != %q {
		t.Skip("the judge's canary fails only in the judge's results run")
	}
	t.Fatal("the judge's canary: this test must fail")
}

func %s(t *testing.T) {}
`, m[1], c.Fail, EnvCanary, c.Nonce, c.Pass)
	return File{Rel: path.Join(dir, "zz_countersign_canary_"+c.Nonce+"_test.go"), Content: []byte(src)}, true
}

// pytestCanary puts test_countersign_canary_<nonce>.py beside the shallowest pytest
// file (test_*.py, *_test.py), else at the top, where pytest collects by default.
func pytestCanary(c *Canaries, testFiles []string) (File, bool) {
	dir, _, ok := shallowest(testFiles, func(rel string) bool {
		b := path.Base(rel)
		return strings.HasSuffix(b, ".py") && (strings.HasPrefix(b, "test_") || strings.HasSuffix(b, "_test.py"))
	})
	if !ok {
		dir = "."
	}
	id := "test_countersign_canary_" + c.Nonce
	c.Fail, c.Pass = id+"_must_fail", id+"_must_pass"
	src := fmt.Sprintf(`# The judge's canary (Countersign): written for one judged run and removed after it.
import os

import pytest


def %s():
    if os.environ.get(%q) != %q:
        pytest.skip("the judge's canary fails only in the judge's results run")
    assert False, "the judge's canary: this test must fail"


def %s():
    pass
`, c.Fail, EnvCanary, c.Nonce, c.Pass)
	return File{Rel: path.Join(dir, id+".py"), Content: []byte(src)}, true
}

// jsTestSuffixRE finds a JavaScript or TypeScript test file's naming: its suffix from
// .test/.spec (or, in a test directory, its extension).
var jsTestSuffixRE = regexp.MustCompile(`((?:[._-](?:test|spec))?\.[cm]?[jt]sx?)$`)

// moduleTypeRE finds "type": "module" in a package.json.
var moduleTypeRE = regexp.MustCompile(`"type"\s*:\s*"module"`)

// jsCanary puts countersign-canary-<nonce><suffix> beside the shallowest JavaScript
// test file, named like it (.test.js, .spec.mjs, …) so that the runner's patterns
// that matched it match the canary too.
func jsCanary(c *Canaries, root string, testFiles []string) (File, bool) {
	dir, file, ok := shallowest(testFiles, func(rel string) bool {
		return !skippedDir(rel, false) && jsTestSuffixRE.MatchString(path.Base(rel)) &&
			(strings.Contains(path.Base(rel), ".test.") || strings.Contains(path.Base(rel), ".spec.") ||
				strings.Contains(path.Base(rel), "-test.") || strings.Contains(path.Base(rel), "_test.") ||
				strings.HasPrefix(rel, "test/") || strings.Contains(rel, "/test/") || strings.Contains(rel, "__tests__/"))
	})
	if !ok {
		return File{}, false
	}
	suffix := jsTestSuffixRE.FindString(path.Base(file))
	id := "countersign canary " + c.Nonce
	c.Fail, c.Pass = id+" must fail", id+" must pass"
	src := jsCanarySource(c, esModule(root, dir, suffix))
	return File{Rel: path.Join(dir, "countersign-canary-"+c.Nonce+suffix), Content: []byte(src)}, true
}

// esModule reports whether a file with suffix in dir is an ES module: .mjs/.mts, or
// .js in a package whose nearest package.json says "type": "module".
func esModule(root, dir, suffix string) bool {
	switch {
	case strings.HasSuffix(suffix, ".mjs") || strings.HasSuffix(suffix, ".mts"):
		return true
	case strings.HasSuffix(suffix, ".cjs") || strings.HasSuffix(suffix, ".cts"):
		return false
	}
	for d := dir; ; d = path.Dir(d) {
		if s := sniff(root, path.Join(d, "package.json")); s != "" {
			return moduleTypeRE.MatchString(s)
		}
		if d == "." || d == "/" {
			return false
		}
	}
}

// jsCanarySource is the canary test for c's runner: node:test's test(), vitest's
// imported test(), or the global test()/it() of jest and mocha.
func jsCanarySource(c *Canaries, esm bool) string {
	head := "// The judge's canary (Countersign): written for one judged run and removed after it.\n"
	gate := fmt.Sprintf("process.env[%q] === %q", EnvCanary, c.Nonce)
	failBody := `() => { throw new Error("the judge's canary: this test must fail"); }`
	switch c.Kind {
	case contract.CanaryNodeTest:
		if esm {
			head += "import test from 'node:test';\n"
		} else {
			head += "const test = require('node:test');\n"
		}
		return head + fmt.Sprintf("test(%q, { skip: !(%s) }, %s);\ntest(%q, () => {});\n", c.Fail, gate, failBody, c.Pass)
	case contract.CanaryVitest:
		head += "import { test } from 'vitest';\n"
		return head + fmt.Sprintf("test.skipIf(!(%s))(%q, %s);\ntest(%q, () => {});\n", gate, c.Fail, failBody, c.Pass)
	case contract.CanaryMocha:
		return head + fmt.Sprintf("((%s) ? it : it.skip)(%q, %s);\nit(%q, () => {});\n", gate, c.Fail, failBody, c.Pass)
	}
	return head + fmt.Sprintf("((%s) ? test : test.skip)(%q, %s);\ntest(%q, () => {});\n", gate, c.Fail, failBody, c.Pass)
}

// ExpectedFailure reports whether a reported test is the must-fail canary, whose
// failure is expected: it fails no check and reaches no diagnosis or brief.
func (c Canaries) ExpectedFailure(name string) bool {
	return c.Fail != "" && strings.Contains(name, c.Fail)
}

// Check holds a run's structured results to the canaries: the must-fail canary
// reported exactly once and failed, the must-pass one exactly once and passed.
// Anything else means the run's reporting was tampered with, and diagnosis says what
// was seen. A run without canaries (Kind "") passes with Reason as its diagnosis.
func (c Canaries) Check(rep testresults.Report) (ok bool, diagnosis string) {
	if c.Kind == "" {
		return true, "no canary: " + c.Reason
	}
	fail, pass := find(rep, c.Fail), find(rep, c.Pass)
	var bad []string
	switch {
	case len(fail) == 0:
		bad = append(bad, "the must-fail canary test is missing from the results")
	case len(fail) > 1:
		bad = append(bad, fmt.Sprintf("the must-fail canary test is reported %d times", len(fail)))
	case fail[0].Status != testresults.StatusFail:
		bad = append(bad, "the must-fail canary test is reported "+string(fail[0].Status))
	}
	switch {
	case len(pass) == 0:
		bad = append(bad, "the must-pass canary test is missing from the results")
	case len(pass) > 1:
		bad = append(bad, fmt.Sprintf("the must-pass canary test is reported %d times", len(pass)))
	case pass[0].Status != testresults.StatusPass:
		bad = append(bad, "the must-pass canary test is reported "+string(pass[0].Status))
	}
	if len(bad) > 0 {
		return false, "the test run was tampered with: " + strings.Join(bad, "; ") +
			" (the judge added a test that must fail and one that must pass; the run's results did not report them as they ran)"
	}
	return true, "the judge's canary tests were reported as they ran"
}

func find(rep testresults.Report, name string) []testresults.Result {
	var out []testresults.Result
	for _, r := range rep.Results {
		if strings.Contains(r.Name, name) {
			out = append(out, r)
		}
	}
	return out
}

// FailReportedNotFailed reports whether the run reported the must-fail canary as
// anything but failed (passed or skipped): never honest, whatever else the run did.
func (c Canaries) FailReportedNotFailed(rep testresults.Report) bool {
	for _, r := range find(rep, c.Fail) {
		if r.Status != testresults.StatusFail {
			return c.Fail != ""
		}
	}
	return false
}

// TestFiles lists the files beside which a canary may go: the protected files the
// base holds and the held-out tests.
func TestFiles(protected []string, heldOut []contract.HeldOutTest) []string {
	out := append([]string(nil), protected...)
	for _, h := range heldOut {
		out = append(out, h.Path)
	}
	return out
}
