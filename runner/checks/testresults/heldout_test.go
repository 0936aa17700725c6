package testresults

import (
	"slices"
	"testing"
)

// TestDefinedTests: the names a held-out file defines, per language; TestMain and
// helpers are not tests.
func TestDefinedTests(t *testing.T) {
	cases := []struct {
		file, src string
		want      []string
	}{
		{"calc_test.go", "package calc\nfunc TestMain(m *testing.M) {}\nfunc TestAddLarge(t *testing.T) {}\nfunc helper(t *testing.T) {}\nfunc TestSub( t *testing.T ) {}\n", []string{"TestAddLarge", "TestSub"}},
		{"tests/test_x.py", "def test_big():\n    pass\nclass TestC:\n    def test_m(self):\n        pass\ndef helper():\n    pass\n", []string{"test_big", "test_m"}},
		{"a.test.mjs", "test('adds big', () => {});\ndescribe('grp', () => { it(\"inner\", () => {}); });\n", []string{"adds big", "inner"}},
		{"README.md", "func TestX(t *testing.T) {}", nil},
	}
	for _, c := range cases {
		if got := DefinedTests(c.file, c.src); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.file, got, c.want)
		}
	}
}

// TestNotRun: a held-out test counts as run only when a result it defines passed or
// failed; skipped or absent ones are named.
func TestNotRun(t *testing.T) {
	rep := Report{Results: []Result{
		{Name: "example.com/calc.TestAddLarge/sub", Status: StatusPass},
		{Name: "tests.test_x.test_big[1]", Status: StatusFail},
		{Name: "grp > inner", Status: StatusSkip},
		{Name: "file.js::adds big", Status: StatusPass},
		{Name: "example.com/calc.TestAddLargeOther", Status: StatusPass},
	}}
	got := NotRun([]string{"TestAddLarge", "test_big", "inner", "adds big", "TestSub", "TestAdd"}, rep)
	if want := []string{"TestAdd", "TestSub", "inner"}; !slices.Equal(got, want) {
		t.Fatalf("not run %q, want %q", got, want)
	}
	if got := NotRun([]string{"TestAdd"}); !slices.Equal(got, []string{"TestAdd"}) {
		t.Fatalf("no reports: %q", got)
	}
}
