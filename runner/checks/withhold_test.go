package checks

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/checks/testresults"
)

var withheldTests = []contract.HeldOutTest{
	{Path: "calc_hidden_test.go", Content: "package calc\n\nfunc TestAddLarge(t *testing.T) {\n\tt.Run(\"big\", func(t *testing.T) {})\n}\n\n" +
		"func (s *Suite) TestSuiteHidden() {}\n"},
	{Path: "tests/test_hidden.py", Content: "def test_big_sum():\n    assert add(1000, 234) == 1234\n\nclass TestHiddenCase:\n    def testOldStyle(self):\n        pass\n"},
	{Path: "test/hidden.test.js", Content: "describe('hidden suite', () => {\n  it.only('adds big numbers', () => {})\n})\ntest('sums 1000 and 234', () => {})\n"},
}

func TestWithholdingDefines(t *testing.T) {
	w := NewWithholding(withheldTests)
	for _, name := range []string{
		"TestAddLarge", "calc.TestAddLarge", "calc.TestAddLarge/big", "TestSuite/TestSuiteHidden",
		"tests/test_hidden.py::test_big_sum", "test_hidden.py::TestHiddenCase::testOldStyle", "tests.test_hidden.test_big_sum",
		"hidden suite > adds big numbers", "sums 1000 and 234", "calc_hidden_test.go",
	} {
		if !w.Defines(name) {
			t.Errorf("%q is not taken for a held-out test", name)
		}
	}
	for _, name := range []string{"TestAdd", "calc.TestAdd", "calc.TestAddLargeX", "tests/test_calc.py::test_add", "calc > adds"} {
		if w.Defines(name) {
			t.Errorf("%q, a visible test, is taken for a held-out one", name)
		}
	}
	if NewWithholding(nil).Defines("TestAddLarge") {
		t.Error("nil withholding withholds")
	}
}

func TestWithheldFailuresCountHeldOutTests(t *testing.T) {
	w := NewWithholding(withheldTests)
	rep := testresults.Report{Fail: 4, Results: []testresults.Result{
		{Name: "calc.TestAdd", Status: testresults.StatusFail, Message: "calc_test.go:6: Add(2, 3) = -1, want 5\nmore"},
		{Name: "calc.TestAddLarge", Status: testresults.StatusFail, Message: "calc_hidden_test.go:7: Add(1000, 234) = 766, want 1234"},
		{Name: "tests/test_hidden.py::test_big_sum", Status: testresults.StatusFail, Message: "assert 766 == 1234"},
		{Name: "calc", Status: testresults.StatusFail, Message: "./calc_hidden_test.go:6:12: undefined: Add"},
		{Name: "calc.TestSub", Status: testresults.StatusPass},
	}}
	got := withheldFailures(rep, w)
	for _, want := range []string{"4 test(s) failed", "calc.TestAdd failed: \"calc_test.go:6: Add(2, 3) = -1, want 5\"",
		"calc failed (its message mentions a held-out test and is withheld)", "2 held-out test(s) failed (their names and inputs are withheld)"} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	for _, secret := range []string{"TestAddLarge", "calc_hidden", "test_big_sum", "1000", "1234", "766", "more"} {
		if strings.Contains(got, secret) {
			t.Errorf("carries %q:\n%s", secret, got)
		}
	}
}

// TestVerifyWithholdsHeldOutTests: a real run whose structured results name a failed
// held-out test and a failed visible one: the diagnosis and the criterion's error
// name the visible one and count the held-out one; Withheld gets everything.
func TestVerifyWithholdsHeldOutTests(t *testing.T) {
	dir := t.TempDir()
	tap := "TAP version 13\n1..3\nnot ok 1 - visible adds\nok 2 - visible subtracts\nnot ok 3 - sums 1000 and 234\n" +
		"  ---\n  message: 'expected 1234, got 766'\n  ...\n"
	if err := os.WriteFile(filepath.Join(dir, "run.tap"), []byte(tap), 0o644); err != nil {
		t.Fatal(err)
	}
	var withheld string
	res, results, _ := VerifyWith(t.Context(), VerifyRequest{Dir: dir,
		Criteria: []contract.Criterion{{Activity: "unit-test", Command: "ignored"}},
		Results:  map[int]contract.TestResults{0: {Format: "tap", Command: "cat run.tap; sed -n 5p run.tap >&2; exit 1"}},
		HeldOut:  withheldTests, Withheld: func(d string) { withheld = d }})
	if res.Verdict != models.VerdictFail {
		t.Fatalf("verdict %s: %s", res.Verdict, res.Diagnosis)
	}
	for where, text := range map[string]string{"diagnosis": res.Diagnosis, "criterion error": results[0].Error} {
		if !strings.Contains(text, "visible adds") || !strings.Contains(text, "1 held-out test(s) failed") {
			t.Errorf("the %s does not name the visible failure and count the held-out one:\n%s", where, text)
		}
		for _, secret := range []string{"sums 1000", "1234", "766"} {
			if strings.Contains(text, secret) {
				t.Errorf("the %s carries %q:\n%s", where, secret, text)
			}
		}
	}
	if !strings.Contains(withheld, "sums 1000 and 234") || !strings.Contains(withheld, "expected 1234, got 766") || !strings.Contains(withheld, "last output:") {
		t.Errorf("what was withheld is not kept for people:\n%s", withheld)
	}
}

// TestVerifyLeavesNoPytestCache: pytest run with held-out tests writes no
// .pytest_cache into the workspace, whose lastfailed would name the held-out test to
// the worker's next attempt; without held-out tests it does (so the check can fail).
func TestVerifyLeavesNoPytestCache(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import pytest").Run(); err != nil {
		t.Fatalf("Debian's python3 with pytest is needed (.ci/run installs python3-pytest): %v", err)
	}
	for _, held := range []bool{true, false} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "test_hidden.py"), []byte("def test_big_sum():\n    assert 1000 + 234 == 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		req := VerifyRequest{Dir: dir, Commands: []string{"/usr/bin/python3 -m pytest -q"},
			Env: []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + t.TempDir(), "PYTEST_ADDOPTS=-q"}}
		if held {
			req.HeldOut = []contract.HeldOutTest{{Path: "test_hidden.py", Content: "def test_big_sum():\n    pass\n"}}
		}
		if res, _, _ := VerifyWith(t.Context(), req); res.Verdict != models.VerdictFail {
			t.Fatalf("held=%v: %s: %s", held, res.Verdict, res.Diagnosis)
		}
		b, err := os.ReadFile(filepath.Join(dir, ".pytest_cache", "v", "cache", "lastfailed"))
		if held && err == nil {
			t.Errorf("pytest left the held-out test's id in the workspace: %s", b)
		}
		if !held && !strings.Contains(string(b), "test_big_sum") {
			t.Errorf("without held-out tests pytest wrote no lastfailed (%v): the check cannot fail", err)
		}
	}
}
