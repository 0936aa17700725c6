package testresults

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestFloorCapturedRuns holds the cheats of issue 21, as the real runners printed
// them, to the run at the base.
func TestFloorCapturedRuns(t *testing.T) {
	cases := []struct {
		name, base, now string
		want            FloorResult
		diagnosis       []string // substrings of Diagnosis
	}{
		{"go: all pass", "go-base.json", "go-base.json",
			FloorResult{AtBase: 4, Run: 4, Passed: 4}, []string{"all 4 tests that passed at the base revision ran and passed"}},
		{"go: t.Skip in TestAdd", "go-base.json", "go-skip.json",
			FloorResult{AtBase: 4, Run: 3, Passed: 3, Skipped: 1, NotRun: []string{calc + "TestAdd"}},
			[]string{"1 of 4 tests", "1 skipped, 0 missing, 0 failed", "TestAdd did not run"}},
		{"go: calc_test.go deleted", "go-base.json", "go-deleted.json",
			FloorResult{AtBase: 4, Missing: 4, NotRun: []string{calc + "TestAdd", calc + "TestTable", calc + "TestTable/two_plus_three", calc + "TestTable/zero"}},
			[]string{"4 of 4", "example.com/calc.TestAdd did not run; example.com/calc.TestTable did not run"}},
		{"go: TestMain exits 0, nothing runs", "go-base.json", "go-testmain-exit0.json",
			FloorResult{AtBase: 4, Missing: 4, NotRun: []string{calc + "TestAdd", calc + "TestTable", calc + "TestTable/two_plus_three", calc + "TestTable/zero"}},
			[]string{"TestAdd did not run"}},
		{"go: a test leaves through syscall.Exit(0)", "go-base.json", "go-syscall-exit.json",
			FloorResult{AtBase: 4, Missing: 4, NotRun: []string{calc + "TestAdd", calc + "TestTable", calc + "TestTable/two_plus_three", calc + "TestTable/zero"}},
			[]string{"TestAdd did not run"}},
		{"go: the wrong code fails", "go-base.json", "go-mixed.json",
			FloorResult{AtBase: 4, Run: 4, Passed: 1, Failed: 3, FailedNames: []string{calc + "TestAdd", calc + "TestTable", calc + "TestTable/two_plus_three"}},
			[]string{"TestAdd failed"}},
		{"pytest: conftest.py skips every test", "pytest-base.xml", "pytest-conftest-skip.xml",
			FloorResult{AtBase: 2, Skipped: 2, NotRun: []string{"tests.test_calc.test_add", "tests.test_calc.test_zero"}},
			[]string{"tests.test_calc.test_add did not run"}},
		{"node: process.exit(0) in a test", "node-tap-exit-base.tap", "node-tap-exit.tap",
			FloorResult{AtBase: 3, Missing: 3, NotRun: []string{"first", "leaves", "never runs"}},
			[]string{"first did not run; leaves did not run; never runs did not run"}},
		{"node: all pass", "node-tap-base.tap", "node-tap-base.tap",
			FloorResult{AtBase: 10, Run: 10, Passed: 10}, nil},
		{"cargo: #[ignore] on it_adds", "cargo-base.txt", "cargo-ignored.txt",
			FloorResult{AtBase: 7, Run: 6, Passed: 6, Skipped: 1, NotRun: []string{"tests::it_adds"}},
			[]string{"tests::it_adds did not run"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Floor(parseFixture(t, c.base), parseFixture(t, c.now))
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Floor = %+v\nwant    %+v", got, c.want)
			}
			wantOK := c.want.Passed == c.want.AtBase
			if got.OK() != wantOK {
				t.Errorf("OK() = %v", got.OK())
			}
			d := got.Diagnosis()
			for _, sub := range c.diagnosis {
				if !strings.Contains(d, sub) {
					t.Errorf("Diagnosis() = %q, want it to hold %q", d, sub)
				}
			}
		})
	}
}

func report(results ...Result) Report {
	c := newCollector("test", false)
	for _, r := range results {
		c.add(r.Name, r.Status, r.Message)
	}
	return c.report()
}

func TestFloor(t *testing.T) {
	base := report(
		Result{Name: "A", Status: StatusPass}, Result{Name: "B", Status: StatusPass}, Result{Name: "C", Status: StatusPass},
		Result{Name: "D", Status: StatusPass}, Result{Name: "Broken", Status: StatusFail}, Result{Name: "Skipped", Status: StatusSkip})
	cases := []struct {
		name string
		now  Report
		want FloorResult
	}{
		{"all pass, new tests and base failures do not matter", report(
			Result{Name: "A", Status: StatusPass}, Result{Name: "B", Status: StatusPass}, Result{Name: "C", Status: StatusPass},
			Result{Name: "D", Status: StatusPass}, Result{Name: "New", Status: StatusFail}, Result{Name: "Broken", Status: StatusFail}),
			FloorResult{AtBase: 4, Run: 4, Passed: 4}},
		{"skipped, deleted and failed", report(
			Result{Name: "A", Status: StatusSkip}, Result{Name: "C", Status: StatusFail}, Result{Name: "D", Status: StatusPass}),
			FloorResult{AtBase: 4, Run: 2, Passed: 1, Skipped: 1, Missing: 1, Failed: 1, NotRun: []string{"A", "B"}, FailedNames: []string{"C"}}},
		{"nothing ran", report(),
			FloorResult{AtBase: 4, Missing: 4, NotRun: []string{"A", "B", "C", "D"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Floor(base, c.now)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Floor = %+v\nwant    %+v", got, c.want)
			}
			if got.OK() != (c.want.Passed == c.want.AtBase) {
				t.Errorf("OK() = %v", got.OK())
			}
		})
	}
	if d := Floor(base, report(Result{Name: "A", Status: StatusSkip}, Result{Name: "C", Status: StatusFail}, Result{Name: "D", Status: StatusPass})).Diagnosis(); d !=
		"3 of 4 tests that passed at the base revision did not pass now (1 skipped, 1 missing, 1 failed): A did not run; B did not run; C failed" {
		t.Errorf("Diagnosis() = %q", d)
	}
	if f := Floor(report(), base); !f.OK() || !strings.Contains(f.Diagnosis(), "no test passed at the base") {
		t.Errorf("empty base: %+v %q", f, f.Diagnosis())
	}
}

// TestFloorBounded: thousands of missing tests with long and hostile names give
// whole counts, short sorted lists and a short diagnosis.
func TestFloorBounded(t *testing.T) {
	var base []Result
	for i := 0; i < 5000; i++ {
		base = append(base, Result{Name: fmt.Sprintf("pkg.Test%04d%s", i, strings.Repeat("x", i%300)), Status: StatusPass})
	}
	base = append(base, Result{Name: "pkg.Aevil\nline\x1b[2J", Status: StatusPass})
	f := Floor(report(base...), report(base[10:5000]...))
	if f.AtBase != 5001 || f.Missing != 11 || f.Passed != 4990 || f.OK() {
		t.Fatalf("counts %+v", f)
	}
	if len(f.NotRun) != 11 || f.NotRun[0] != "pkg.Aevil\nline\x1b[2J" {
		t.Fatalf("NotRun = %q", f.NotRun)
	}
	d := f.Diagnosis()
	if len(d) > MaxDiagnosisBytes || strings.ContainsAny(d, "\n\x1b") || !strings.Contains(d, `"pkg.Aevil\nline\x1b[2J" did not run`) || strings.Contains(d, "more") {
		t.Errorf("Diagnosis() (%d bytes) = %q", len(d), d)
	}

	f = Floor(report(base...), report())
	if len(f.NotRun) != MaxListedNames || f.Missing != 5001 {
		t.Fatalf("NotRun has %d, Missing %d", len(f.NotRun), f.Missing)
	}
	if d := f.Diagnosis(); len(d) > MaxDiagnosisBytes || !strings.HasSuffix(d, fmt.Sprintf("and %d more", 5001-strings.Count(d, " did not run"))) {
		t.Errorf("Diagnosis() (%d bytes) = %q", len(d), d)
	}
}
