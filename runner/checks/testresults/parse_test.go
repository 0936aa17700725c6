package testresults

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

const calc = "example.com/calc."

// TestParseCapturedOutputs reads the real outputs under testdata (see its README
// for the commands that made each).
func TestParseCapturedOutputs(t *testing.T) {
	goBase := all(StatusPass, calc+"TestAdd", calc+"TestTable", calc+"TestTable/zero", calc+"TestTable/two_plus_three")
	cargoBase := all(StatusPass, "tests::nested::deep", "tests::panics", "tests::zero", "tests::it_adds", "it_works", "zero", "src/lib.rs - add (line 5)")
	cases := []struct {
		file string
		want map[string]Status
		msgs map[string]string // name: a substring its message must hold
	}{
		{"go-mixed.json", merge(
			all(StatusPass, calc+"TestSub", calc+"TestTable/zero", calc+"TestParallelA", calc+"TestParallelB", "example.com/calc/sub.TestInSub"),
			all(StatusFail, calc+"TestAdd", calc+"TestTable", calc+"TestTable/two_plus_three"),
			all(StatusSkip, calc+"TestSkipped"),
		), map[string]string{calc + "TestAdd": "Add(2, 3) = -1, want 5", calc + "TestTable/two_plus_three": "Add(2, 3) = -1, want 5", calc + "TestSkipped": "flaky on CI"}},
		{"go-base.json", goBase, nil},
		{"go-skip.json", merge(goBase, all(StatusSkip, calc+"TestAdd")), nil},
		{"go-deleted.json", all(StatusPass), nil},
		{"go-testmain-exit0.json", all(StatusPass), nil},
		{"go-build-fail.json", all(StatusFail, "example.com/calc (package failed)"), map[string]string{"example.com/calc (package failed)": "did not build"}},
		{"go-exit-mid-test.json", all(StatusFail, calc+"TestA0Exit"), map[string]string{calc + "TestA0Exit": "unexpected call to os.Exit(0)"}},
		{"go-syscall-exit.json", all(StatusFail, calc+"TestA0Exit"), map[string]string{calc + "TestA0Exit": `without its "--- PASS" line`}},
		{"go-goroutine-panic.json", merge(goBase, all(StatusFail, calc+"TestZGo", calc+"TestZGo/p", calc+"TestZGo/q")),
			map[string]string{calc + "TestZGo/p": "did not report a result", calc + "TestZGo/q": "panic: from a goroutine"}},
		{"go-panic.json", all(StatusFail, calc+"TestBoom", calc+"TestBoom/inner"), map[string]string{calc + "TestBoom": "assignment to entry in nil map"}},

		{"node-tap.tap", merge(
			all(StatusPass, "zero", "suite of cases > inner pass", "suite of cases > deeper > deepest", "suite of cases > deeper", "same name", "same name [2]", `name with # hash and \ backslash`),
			all(StatusFail, "add works", "suite of cases > inner fail", "suite of cases"),
			all(StatusSkip, "skipped one", "todo one"),
		), map[string]string{"add works": "-1 !== 5", "suite of cases > inner fail": "0 !== 2", "skipped one": "flaky on CI"}},
		{"node-tap-base.tap", merge(
			all(StatusPass, "add works", "zero", "suite of cases > inner pass", "suite of cases > inner fail", "suite of cases > deeper > deepest", "suite of cases > deeper", "suite of cases", "same name", "same name [2]", `name with # hash and \ backslash`),
			all(StatusSkip, "skipped one", "todo one"),
		), nil},
		{"node-tap-exit.tap", all(StatusPass, "/tmp/tr/node/exit.test.js"), nil},
		{"node-tap-exit-base.tap", all(StatusPass, "first", "leaves", "never runs"), nil},

		{"pytest-junit.xml", merge(
			all(StatusPass, "tests.test_calc.test_zero", "tests.test_calc.test_param[0-0-0]", "tests.test_calc.TestClass.test_method"),
			all(StatusFail, "tests.test_calc.test_add", "tests.test_calc.test_param[2-3-5]", "tests.test_calc.test_error", "tests.test_calc.TestClass.test_output"),
			all(StatusSkip, "tests.test_calc.test_skipped", "tests.test_calc.test_xfail"),
		), map[string]string{"tests.test_calc.test_add": "assert -1 == 5", "tests.test_calc.test_error": "fixture exploded", "tests.test_calc.TestClass.test_output": "some <output> & stuff"}},
		{"pytest-base.xml", all(StatusPass, "tests.test_calc.test_add", "tests.test_calc.test_zero"), nil},
		{"pytest-conftest-skip.xml", all(StatusSkip, "tests.test_calc.test_add", "tests.test_calc.test_zero"), nil},

		{"cargo-test.txt", merge(
			all(StatusPass, "tests::panics", "tests::zero", "tests::nested::deep", "it_works", "src/lib.rs - add (line 5)"),
			all(StatusFail, "tests::it_adds", "zero"),
			all(StatusSkip, "tests::ignored_one"),
		), map[string]string{"tests::it_adds": "left: -1", "zero": "two plus two"}},
		{"cargo-base.txt", merge(cargoBase, all(StatusSkip, "tests::ignored_one")), nil},
		{"cargo-ignored.txt", merge(cargoBase, all(StatusSkip, "tests::ignored_one", "tests::it_adds")), nil},
		{"cargo-exit-serial.txt", merge(all(StatusPass, "tests::a_passes"), all(StatusFail, "tests::b_exits", "(tests not reported in test run 1)")),
			map[string]string{"tests::b_exits": "exited during the test", "(tests not reported in test run 1)": `"running 3 tests" announced them; 2 reported`}},
		{"cargo-exit-parallel.txt", all(StatusFail, "(tests not reported in test run 1)"), nil},

		{"jest-mixed.jest", merge(
			all(StatusPass, "adds"),
			all(StatusFail, "grp > inner", "broken.test.js (the test file did not run)"),
			all(StatusSkip, "skipped one"),
		), map[string]string{"grp > inner": "Expected: 2", "broken.test.js (the test file did not run)": "Test suite failed to run"}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			rep := parseFixture(t, c.file)
			if rep.Format != formatOf(c.file) || rep.Truncated {
				t.Errorf("format %q truncated %v", rep.Format, rep.Truncated)
			}
			checkResults(t, rep, c.want)
			for name, sub := range c.msgs {
				if msg := messageOf(rep, name); !strings.Contains(msg, sub) {
					t.Errorf("message of %s = %q, want it to hold %q", name, msg, sub)
				}
			}
			for _, r := range rep.Results {
				if r.Status == StatusPass && r.Message != "" {
					t.Errorf("%s passed with a message %q", r.Name, r.Message)
				}
				if len(r.Message) > MaxMessageBytes || strings.Count(r.Message, "\n") > MaxMessageLines {
					t.Errorf("message of %s is %d bytes, %d lines", r.Name, len(r.Message), strings.Count(r.Message, "\n")+1)
				}
			}
		})
	}
}

func TestParseUnknownFormat(t *testing.T) {
	if _, err := parseString("xunit", "", 0); err == nil || !strings.Contains(err.Error(), "unknown format") {
		t.Fatalf("err = %v", err)
	}
}

// TestParseTruncated cuts each fixture in the middle: the report says so, the error
// wraps ErrTruncated, and no test cut off counts as passed that did not pass whole.
func TestParseTruncated(t *testing.T) {
	for _, file := range []string{"go-mixed.json", "node-tap.tap", "pytest-junit.xml", "cargo-test.txt"} {
		t.Run(file, func(t *testing.T) {
			whole := parseFixture(t, file)
			data := readFixture(t, file)
			for _, cut := range []int{1, len(data) / 3, len(data) / 2, len(data) - 2} {
				rep, err := Parse(formatOf(file), strings.NewReader(data), int64(cut))
				if !errors.Is(err, ErrTruncated) || !rep.Truncated {
					t.Fatalf("cut at %d: err %v, truncated %v", cut, err, rep.Truncated)
				}
				wholeStatus := statuses(whole)
				for _, r := range rep.Results {
					if r.Status == StatusPass && wholeStatus[r.Name] != StatusPass {
						t.Errorf("cut at %d: %s passed, whole run: %s", cut, r.Name, wholeStatus[r.Name])
					}
				}
			}
			// A reader that stops early (here at a syntax error) still reads up to max,
			// so that Truncated is true exactly when the input was longer.
			bad := "<not xml" + data
			rep, err := Parse(FormatJUnitXML, strings.NewReader(bad), int64(len(bad)-1))
			if !rep.Truncated || !errors.Is(err, ErrTruncated) {
				t.Errorf("stopped early: err %v, truncated %v", err, rep.Truncated)
			}
			rep, err = Parse(formatOf(file), strings.NewReader(data), int64(len(data)))
			if err != nil || rep.Truncated {
				t.Fatalf("max = the length: err %v, truncated %v", err, rep.Truncated)
			}
		})
	}
}

// TestParseReadError: a reader that fails gives the error with what was read.
func TestParseReadError(t *testing.T) {
	boom := errors.New("boom")
	r := &failingReader{data: "{\"Action\":\"run\",\"Package\":\"p\",\"Test\":\"TestA\"}\n", err: boom}
	rep, err := Parse(FormatGoTestJSON, r, 0)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	checkResults(t, rep, all(StatusFail, "p.TestA"))
}

type failingReader struct {
	data string
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.data == "" {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

// TestMessageBounds: a message keeps its first lines within MaxMessageLines and
// MaxMessageBytes, with control characters replaced.
func TestMessageBounds(t *testing.T) {
	var m message
	m.addText("\n\n  \nfirst\x1b[31m\r\n" + strings.Repeat("line\n", 100))
	got := m.String()
	if !strings.HasPrefix(got, "first�[31m\nline\n") || strings.Count(got, "\n") != MaxMessageLines || !strings.HasSuffix(got, "\n…") {
		t.Errorf("message = %q", got)
	}
	var long message
	long.addText(strings.Repeat("é", 3000) + "\n" + strings.Repeat("x", 5000))
	if got := long.String(); len(got) > MaxMessageBytes || !strings.HasSuffix(got, "…") || !utf8.ValidString(got) {
		t.Errorf("long message of %d bytes", len(got))
	}
}
