package judge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/checks/testresults"
)

// TestNewCanariesPlacement: each kind goes beside the shallowest test file its runner
// collects, named afresh; a runner without a canary, or no place for one, says why.
func TestNewCanariesPlacement(t *testing.T) {
	root := t.TempDir()
	for rel, content := range map[string]string{
		"pkg/a_test.go":           "// c\npackage pkg_test\n",
		"testdata/x/b_test.go":    "package x\n",
		"web/package.json":        `{"type": "module"}`,
		"web/src/app.spec.mjs":    "",
		"web/test/deep/x.test.js": "",
	} {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := []string{"held_out_test.go", "testdata/x/b_test.go", "pkg/a_test.go", "web/src/app.spec.mjs", "web/test/deep/x.test.js", "tests/unit/test_m.py", "tests/test_n.py"}
	cases := []struct {
		kind, want, content string
	}{
		{contract.CanaryGo, "pkg/zz_countersign_canary_N_test.go", "package pkg_test"},
		{contract.CanaryPytest, "tests/test_countersign_canary_N.py", "def test_countersign_canary_N_must_fail"},
		{contract.CanaryNodeTest, "web/src/countersign-canary-N.spec.mjs", "import test from 'node:test'"},
		{contract.CanaryVitest, "web/src/countersign-canary-N.spec.mjs", "from 'vitest'"},
		{contract.CanaryJest, "web/src/countersign-canary-N.spec.mjs", "? test : test.skip"},
		{contract.CanaryMocha, "web/src/countersign-canary-N.spec.mjs", "? it : it.skip"},
	}
	for _, c := range cases {
		got, can := NewCanaries("N", contract.TestResults{Canary: c.kind}, root, files)
		if len(got) != 1 || got[0].Rel != c.want || !strings.Contains(string(got[0].Content), c.content) || can.Kind != c.kind {
			t.Errorf("%s: %+v %+v, want %s holding %q", c.kind, got, can, c.want, c.content)
		}
	}
	if got, can := NewCanaries("N", contract.TestResults{Format: "cargo-test", Command: "cargo test"}, root, files); got != nil || can.Kind != "" || !strings.Contains(can.Reason, "carry no canary") {
		t.Errorf("cargo: %+v %+v", got, can)
	}
	if got, can := NewCanaries("N", contract.TestResults{Canary: contract.CanaryGo}, root, []string{"held_out_test.go"}); got != nil || !strings.Contains(can.Reason, "no go test file") {
		t.Errorf("go without a readable test file: %+v %+v", got, can)
	}
	if got, _ := NewCanaries("N", contract.TestResults{Canary: contract.CanaryPytest}, root, nil); len(got) != 1 || got[0].Rel != "test_countersign_canary_N.py" {
		t.Errorf("pytest with no test file: %+v", got)
	}
	if a, b := NewNonce(), NewNonce(); len(a) != 16 || a == b {
		t.Errorf("nonces %q %q", a, b)
	}
}

// TestCanaryCheck: only the must-fail canary failed once and the must-pass one passed
// once is honest; anything else is tampering, and a failure is expected only of the
// must-fail canary.
func TestCanaryCheck(t *testing.T) {
	c := Canaries{Kind: contract.CanaryGo, Nonce: "N", Fail: "TestCanaryNMustFail", Pass: "TestCanaryNMustPass"}
	res := func(fail, pass testresults.Status, extra ...testresults.Result) testresults.Report {
		var rs []testresults.Result
		if fail != "" {
			rs = append(rs, testresults.Result{Name: "p.TestCanaryNMustFail", Status: fail})
		}
		if pass != "" {
			rs = append(rs, testresults.Result{Name: "p.TestCanaryNMustPass", Status: pass})
		}
		return testresults.Report{Results: append(rs, extra...)}
	}
	cases := []struct {
		rep  testresults.Report
		ok   bool
		diag string
	}{
		{res(testresults.StatusFail, testresults.StatusPass), true, "as they ran"},
		{res(testresults.StatusPass, testresults.StatusPass), false, "must-fail canary test is reported pass"},
		{res(testresults.StatusSkip, testresults.StatusPass), false, "must-fail canary test is reported skip"},
		{res("", testresults.StatusPass), false, "must-fail canary test is missing"},
		{res(testresults.StatusFail, ""), false, "must-pass canary test is missing"},
		{res(testresults.StatusFail, testresults.StatusFail), false, "must-pass canary test is reported fail"},
		{res(testresults.StatusFail, testresults.StatusPass, testresults.Result{Name: "p.TestCanaryNMustFail [2]", Status: testresults.StatusFail}), false, "reported 2 times"},
	}
	for i, tc := range cases {
		ok, diag := c.Check(tc.rep)
		if ok != tc.ok || !strings.Contains(diag, tc.diag) {
			t.Errorf("case %d: %v %q, want %v %q", i, ok, diag, tc.ok, tc.diag)
		}
	}
	if !c.ExpectedFailure("p.TestCanaryNMustFail") || c.ExpectedFailure("p.TestCanaryNMustPass") || c.ExpectedFailure("p.TestAdd") {
		t.Error("ExpectedFailure")
	}
	if ok, diag := (Canaries{Reason: "make"}).Check(testresults.Report{}); !ok || !strings.Contains(diag, "no canary: make") {
		t.Errorf("none: %v %q", ok, diag)
	}
}
