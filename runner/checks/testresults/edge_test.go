package testresults

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// ev writes one go test -json event.
func ev(action, pkg, test, output string) string {
	s := `{"Action":"` + action + `","Package":"` + pkg + `"`
	if test != "" {
		s += `,"Test":"` + test + `"`
	}
	if output != "" {
		s += `,"Output":"` + output + `"`
	}
	return s + "}\n"
}

// goPass writes the events of a test that passes.
func goPass(pkg, test string) string {
	return ev("run", pkg, test, "") + ev("output", pkg, test, `--- PASS: `+test+` (0.00s)\n`) + ev("pass", pkg, test, "")
}

type edgeCase struct {
	name   string
	format string
	input  string
	want   map[string]Status
	msgs   map[string]string
	errSub string // a substring of Parse's error; "" for none
}

func runEdgeCases(t *testing.T, cases []edgeCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := parseString(c.format, c.input, 0)
			switch {
			case c.errSub == "" && err != nil:
				t.Fatalf("err = %v", err)
			case c.errSub != "" && (err == nil || !strings.Contains(err.Error(), c.errSub)):
				t.Fatalf("err = %v, want one holding %q", err, c.errSub)
			}
			checkResults(t, rep, c.want)
			for name, sub := range c.msgs {
				if msg := messageOf(rep, name); !strings.Contains(msg, sub) {
					t.Errorf("message of %q = %q, want it to hold %q", name, msg, sub)
				}
			}
		})
	}
}

func TestParseGoTestEdgeCases(t *testing.T) {
	runEdgeCases(t, []edgeCase{
		{name: "package events are not tests", format: FormatGoTestJSON,
			input: ev("start", "p", "", "") + ev("output", "p", "", `ok  \tp\t0.1s\n`) + ev("pass", "p", "", "") + ev("skip", "q", "", ""),
			want:  all(StatusPass)},
		{name: "a test that never ends fails", format: FormatGoTestJSON,
			input: goPass("p", "TestA") + ev("run", "p", "TestB", "") + ev("output", "p", "TestB", `working\n`),
			want:  merge(all(StatusPass, "p.TestA"), all(StatusFail, "p.TestB")),
			msgs:  map[string]string{"p.TestB": "did not report a result: the output ended"}},
		{name: "the package ends while a test runs", format: FormatGoTestJSON,
			input: ev("run", "p", "TestB", "") + ev("run", "q", "TestC", "") + ev("pass", "p", "", "") + goPass("q", "TestD") + ev("output", "q", "TestC", `--- PASS: TestC (0.00s)\n`) + ev("pass", "q", "TestC", ""),
			want:  merge(all(StatusPass, "q.TestC", "q.TestD"), all(StatusFail, "p.TestB")),
			msgs:  map[string]string{"p.TestB": "the test binary exited"}},
		{name: "pass without its report line fails", format: FormatGoTestJSON,
			input: ev("run", "p", "TestA", "") + ev("pass", "p", "TestA", "") + ev("run", "p", "TestS", "") + ev("skip", "p", "TestS", ""),
			want:  all(StatusFail, "p.TestA", "p.TestS")},
		{name: "a report line of another status fails", format: FormatGoTestJSON,
			input: ev("run", "p", "TestA", "") + ev("output", "p", "TestA", `--- SKIP: TestA (0.00s)\n`) + ev("pass", "p", "TestA", ""),
			want:  all(StatusFail, "p.TestA")},
		{name: "an indented report line attributed to the parent counts", format: FormatGoTestJSON,
			input: ev("run", "p", "TestA", "") + ev("run", "p", "TestA/x", "") + ev("output", "p", "TestA", `    --- PASS: TestA/x (0.00s)\n`) + ev("pass", "p", "TestA/x", "") +
				ev("output", "p", "TestA", `--- PASS: TestA (0.00s)\n`) + ev("pass", "p", "TestA", ""),
			want: all(StatusPass, "p.TestA", "p.TestA/x")},
		{name: "interleaved parallel tests of two packages", format: FormatGoTestJSON,
			input: ev("run", "a", "TestX", "") + ev("run", "b", "TestX", "") + ev("output", "b", "TestX", `    x_test.go:3: nope\n`) +
				ev("output", "a", "TestX", `--- PASS: TestX (0.00s)\n`) + ev("output", "b", "TestX", `--- FAIL: TestX (0.00s)\n`) + ev("fail", "b", "TestX", "") + ev("pass", "a", "TestX", ""),
			want: merge(all(StatusPass, "a.TestX"), all(StatusFail, "b.TestX")),
			msgs: map[string]string{"b.TestX": "x_test.go:3: nope"}},
		{name: "a repeated test keeps its worst result", format: FormatGoTestJSON,
			input: goPass("p", "TestA") + ev("run", "p", "TestA", "") + ev("output", "p", "TestA", `--- FAIL: TestA (0.00s)\n`) + ev("fail", "p", "TestA", "") +
				goPass("p", "TestB") + goPass("p", "TestB") +
				ev("run", "p", "TestC", "") + ev("output", "p", "TestC", `--- FAIL: TestC (0.00s)\n`) + ev("fail", "p", "TestC", "") + goPass("p", "TestC"),
			want: merge(all(StatusFail, "p.TestA", "p.TestC"), all(StatusPass, "p.TestB"))},
		// go test never prints a newline in a name (the testing package escapes it), so
		// a name with one cannot match its report line and counts as failed.
		{name: "hostile names with newlines and lines that are not JSON", format: FormatGoTestJSON,
			input: "go: downloading x\n{not json\n" + goPass("p", `Test\u001b[2JB`) + goPass("p", `Test\nA`) + ev("run", "p", `Test\tC`, "") + "\n",
			want:  merge(all(StatusPass, "p.Test\x1b[2JB"), all(StatusFail, "p.Test\nA", "p.Test\tC"))},
		{name: "a failure's output is bounded", format: FormatGoTestJSON,
			input: ev("run", "p", "TestA", "") + strings.Repeat(ev("output", "p", "TestA", `line of output\n`), 1000) + ev("output", "p", "TestA", `--- FAIL: TestA (0.00s)\n`) + ev("fail", "p", "TestA", ""),
			want:  all(StatusFail, "p.TestA"), msgs: map[string]string{"p.TestA": "line of output\nline of output"}},
	})
}

func TestParseTAPEdgeCases(t *testing.T) {
	runEdgeCases(t, []edgeCase{
		{name: "planned tests that never reported fail", format: FormatTAP,
			input: "TAP version 14\n1..4\nok 1 - a\nnot ok 2 - b\n",
			want:  merge(all(StatusPass, "a"), all(StatusFail, "b", "(planned tests not reported)")),
			msgs:  map[string]string{"(planned tests not reported)": "the plan announced 4 tests, 2 reported"}},
		{name: "plan at the end, directives, no numbers, no dash", format: FormatTAP,
			input: "ok a\nok 2 b # skip not today\nnot ok 3 - c # TODO later\nok 4 - d \\# not a directive\nok 5\n1..5\n",
			want:  merge(all(StatusPass, "a", "d # not a directive", "#5"), all(StatusSkip, "b", "c"))},
		{name: "a subtest's plan counts too", format: FormatTAP,
			input: "# Subtest: outer\n    1..3\n    ok 1 - a\nok 1 - outer\n1..1\n",
			want:  merge(all(StatusPass, "outer > a", "outer"), all(StatusFail, "outer > (planned tests not reported)"))},
		{name: "bail out", format: FormatTAP,
			input: "1..3\nok 1 - a\nBail out! database gone\nok 2 - b\n",
			want:  merge(all(StatusPass, "a"), all(StatusFail, "Bail out!", "(planned tests not reported)")),
			msgs:  map[string]string{"Bail out!": "database gone"}},
		{name: "a subtest announced that never reports fails, with its children", format: FormatTAP,
			input: "# Subtest: outer\n    # Subtest: inner\n    ok 1 - inner\n    # Subtest: crashed\n",
			want:  merge(all(StatusPass, "outer > inner"), all(StatusFail, "outer > crashed", "outer")),
			msgs:  map[string]string{"outer": "did not report a result"}},
		{name: "TAP 14 subtests without headers take the parent's description", format: FormatTAP,
			input: "TAP version 14\n    ok 1 - child\n    1..1\nok 1 - parent\n    ok 1 - child\n    not ok 2 - other\n    1..2\nnot ok 2 - parent2\n1..2\n",
			want:  merge(all(StatusPass, "parent > child", "parent", "parent2 > child"), all(StatusFail, "parent2 > other", "parent2")),
			msgs:  nil},
		{name: "duplicate names are numbered", format: FormatTAP,
			input: "ok 1 - same\nnot ok 2 - same\nok 3 - same\n",
			want:  merge(all(StatusPass, "same", "same [3]"), all(StatusFail, "same [2]"))},
		{name: "YAML of a failure goes to its message, test lines inside it are not tests", format: FormatTAP,
			input: "not ok 1 - a\n  ---\n  duration_ms: 1\n  error: |-\n    ok 9 - fake\n    boom\n  ...\nok 2 - b\n",
			want:  merge(all(StatusFail, "a"), all(StatusPass, "b")),
			msgs:  map[string]string{"a": "error: |-\n  ok 9 - fake\n  boom"}},
		{name: "a YAML block never closed ends at a line less indented", format: FormatTAP,
			input: "not ok 1 - a\n  ---\n  error: x\nok 2 - b\n",
			want:  merge(all(StatusFail, "a"), all(StatusPass, "b"))},
		{name: "hostile: no TAP at all", format: FormatTAP,
			input: "hello\n\x00\xff\n#\n1..x\n",
			want:  all(StatusPass)},
	})
}

func TestParseJUnitEdgeCases(t *testing.T) {
	long := strings.Repeat("é&amp;", 20000)
	runEdgeCases(t, []edgeCase{
		{name: "nested suites without classname, file, error, CDATA", format: FormatJUnitXML,
			input: `<?xml version="1.0" encoding="ISO-8859-1"?><testsuites><testsuite name="outer"><testsuite name="inner">` +
				`<testcase name="a"/><testcase name="b"><error type="E"><![CDATA[stack <here> & there]]></error></testcase></testsuite>` +
				`<testcase name="c" file="t/test_c.py"><skipped/></testcase><!-- a comment --><testcase name="d"><system-out>noise</system-out></testcase></testsuite>` +
				`<testcase name="bare"/></testsuites>`,
			want: merge(all(StatusPass, "outer/inner.a", "outer.d", "bare"), all(StatusFail, "outer/inner.b"), all(StatusSkip, "t/test_c.py::c")),
			msgs: map[string]string{"outer/inner.b": "stack <here> & there"}},
		{name: "failure wins over skipped, repeated names merge", format: FormatJUnitXML,
			input: `<testsuite><testcase classname="k" name="x"><skipped/><failure message="m"/></testcase><testcase classname="k" name="y"/><testcase classname="k" name="y"><skipped/></testcase></testsuite>`,
			want:  merge(all(StatusFail, "k.x"), all(StatusSkip, "k.y"))},
		{name: "skipped after a failure, and a repeat that passes, still fail", format: FormatJUnitXML,
			input: `<testsuite><testcase classname="k" name="x"><failure/><skipped/></testcase><testcase classname="k" name="x"/></testsuite>`,
			want:  all(StatusFail, "k.x")},
		{name: "cut off inside a test case", format: FormatJUnitXML,
			input: `<testsuite><testcase classname="k" name="x"/><testcase classname="k" name="y"><failure>so`,
			want:  merge(all(StatusPass, "k.x"), all(StatusFail, "k.y")), errSub: "not well-formed XML",
			msgs: map[string]string{"k.y": "the report ended inside this test case"}},
		{name: "not XML", format: FormatJUnitXML, input: "this is <<not xml", want: all(StatusPass), errSub: "not well-formed"},
		{name: "empty", format: FormatJUnitXML, input: "", want: all(StatusPass)},
		{name: "hostile names with newlines", format: FormatJUnitXML,
			input: `<testsuite><testcase classname="k" name="a&#10;b"/></testsuite>`,
			want:  all(StatusPass, "k.a\nb")},
		{name: "long text and attributes are cut, still well-formed", format: FormatJUnitXML,
			input: `<testsuite><!--` + long + `--><testcase classname="k" name="x"><failure message="` + long + `">` + long + `<![CDATA[` + long + `]]></failure></testcase><testcase classname="k" name="z"/></testsuite>`,
			want:  merge(all(StatusFail, "k.x"), all(StatusPass, "k.z")),
			msgs:  map[string]string{"k.x": "é&é&"}},
		{name: "nesting too deep", format: FormatJUnitXML, input: strings.Repeat("<a>", 300), want: all(StatusPass), errSub: "nested deeper"},
		{name: "a tag too long", format: FormatJUnitXML, input: "<testsuite " + strings.Repeat(`a="1" `, 40000) + ">", want: all(StatusPass), errSub: "longer than 64 KiB"},
	})
}

func TestParseCargoEdgeCases(t *testing.T) {
	runEdgeCases(t, []edgeCase{
		{name: "a result line printed by the code cannot turn a failure into a pass", format: FormatCargoTest,
			input: "running 2 tests\ntest t::a ... ok\ntest t::b ... FAILED\n\nfailures:\n\n---- t::b stdout ----\ntest t::b ... ok\ntest t::c ... ok\n\nfailures:\n    t::b\n\ntest result: FAILED. 1 passed; 1 failed\ntest t::d ... ok\n",
			want:  merge(all(StatusPass, "t::a"), all(StatusFail, "t::b")),
			msgs:  map[string]string{"t::b": "test t::b ... ok"}},
		{name: "output injected before the real line still fails", format: FormatCargoTest,
			input: "running 1 test\ntest t::a ... ok\ntest t::a ... FAILED\ntest result: FAILED.\n",
			want:  all(StatusFail, "t::a")},
		{name: "nocapture: the result follows the test's output", format: FormatCargoTest,
			input: "running 2 tests\ntest t::a ... hello from a\nok\ntest t::b ... bench:         12 ns/iter (+/- 1)\ntest result: ok.\n",
			want:  all(StatusPass, "t::a", "t::b")},
		{name: "running 1 test, should panic, ignored with a reason", format: FormatCargoTest,
			input: "running 1 test\ntest t::p - should panic ... ok\n\nrunning 1 test\ntest t::i ... ignored, slow\n",
			want:  merge(all(StatusPass, "t::p"), all(StatusSkip, "t::i"))},
		{name: "lines outside a run are not results", format: FormatCargoTest,
			input: "test t::a ... ok\n   Compiling x\n",
			want:  all(StatusPass)},
		{name: "hostile names", format: FormatCargoTest,
			input: "running 1 test\ntest \x1b[31mred ... ok\n",
			want:  all(StatusPass, "\x1b[31mred")},
	})
}

// TestXMLLimiter: what the limiter passes on is well-formed, bounded, and the same
// whatever the size of the reads.
func TestXMLLimiter(t *testing.T) {
	long := strings.Repeat("é&amp;x", 10000)
	in := `<?xml version="1.0"?><r a="` + long + `"><!-- ` + long + ` -->` + long + `<![CDATA[` + long + `]]><s/></r>`
	whole, err := io.ReadAll(newXMLLimiter(strings.NewReader(in)))
	if err != nil {
		t.Fatal(err)
	}
	bytewise, err := io.ReadAll(iotest.OneByteReader(newXMLLimiter(iotest.OneByteReader(strings.NewReader(in)))))
	if err != nil || string(bytewise) != string(whole) {
		t.Fatalf("byte by byte: %v, %d bytes, whole %d", err, len(bytewise), len(whole))
	}
	if len(whole) > 4*maxXMLRun || !strings.Contains(string(whole), "<!---->") {
		t.Errorf("%d bytes out of %d", len(whole), len(in))
	}
	d := xml.NewDecoder(strings.NewReader(string(whole)))
	var texts int
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
		if c, ok := tok.(xml.CharData); ok {
			texts++
			if !utf8.Valid(c) || len(c) > maxXMLRun+12 {
				t.Errorf("text of %d bytes, valid UTF-8 %v", len(c), utf8.Valid(c))
			}
		}
	}
	if texts != 2 {
		t.Errorf("%d texts", texts)
	}
}
