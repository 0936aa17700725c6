package testresults

import (
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

// stream is a reader of prefix, then n bytes repeating filler, then suffix, made
// as it is read: a 100 MB input without 100 MB in memory. It counts what was read.
type stream struct {
	prefix, filler, suffix string
	n, pos, read           int64
}

func (s *stream) Read(p []byte) (int, error) {
	if len(s.filler) < 4096 {
		s.filler = strings.Repeat(s.filler, 4096/len(s.filler)+1)
	}
	total := int64(len(s.prefix)) + s.n + int64(len(s.suffix))
	if s.pos >= total {
		return 0, io.EOF
	}
	i := 0
	for i < len(p) && s.pos < total {
		switch pre, body := int64(len(s.prefix)), int64(len(s.prefix))+s.n; {
		case s.pos < pre:
			k := copy(p[i:], s.prefix[s.pos:])
			i, s.pos = i+k, s.pos+int64(k)
		case s.pos < body:
			off := (s.pos - pre) % int64(len(s.filler))
			k := int64(copy(p[i:], s.filler[off:]))
			k = min(k, body-s.pos)
			i, s.pos = i+int(k), s.pos+k
		default:
			k := copy(p[i:], s.suffix[s.pos-body:])
			i, s.pos = i+k, s.pos+int64(k)
		}
	}
	s.read += int64(i)
	return i, nil
}

const hundredMB = 100 << 20

// allocated runs f and returns the bytes it allocated in all.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestParseHundredMBWithSmallMax: a test that prints 100 MB is read only up to max,
// and the report says it was cut.
func TestParseHundredMBWithSmallMax(t *testing.T) {
	cases := []struct{ format, prefix, filler string }{
		{FormatGoTestJSON, goPass("p", "TestOK") + ev("run", "p", "TestA", ""), ev("output", "p", "TestA", `spam spam spam\n`)},
		{FormatJUnitXML, `<testsuite><testcase classname="k" name="a"/><testcase classname="k" name="b"><system-out>`, "spam &amp; spam\n"},
		{FormatTAP, "TAP version 13\n1..2\nok 1 - a\n", "# spam spam\n"},
		{FormatCargoTest, "running 2 tests\ntest a ... ok\n", "spam spam\n"},
	}
	const max = 1 << 20
	for _, c := range cases {
		t.Run(c.format, func(t *testing.T) {
			s := &stream{prefix: c.prefix, filler: c.filler, n: hundredMB}
			var rep Report
			var err error
			alloc := allocated(func() { rep, err = Parse(c.format, s, max) })
			if !errors.Is(err, ErrTruncated) || !rep.Truncated {
				t.Fatalf("err %v, truncated %v", err, rep.Truncated)
			}
			if s.read > max+1 {
				t.Errorf("read %d bytes, max %d", s.read, max)
			}
			if alloc > 64<<20 {
				t.Errorf("allocated %d MB for a 1 MB bound", alloc>>20)
			}
			if rep.Pass != 1 || rep.Fail != 1 {
				t.Errorf("report %+v", rep)
			}
		})
	}
}

// TestParseHundredMBLine: with a bound larger than the input, one line, text node
// or attribute of 100 MB is read through and never held.
func TestParseHundredMBLine(t *testing.T) {
	cases := []struct {
		name, format, prefix, filler, suffix string
		want                                 map[string]Status
	}{
		{"go output line", FormatGoTestJSON, ev("run", "p", "TestA", "") + `{"Action":"output","Package":"p","Test":"TestA","Output":"`, "x", `"}` + "\n" + ev("pass", "p", "TestA", ""),
			all(StatusFail, "p.TestA")}, // its report line is gone with the long line
		{"junit text", FormatJUnitXML, `<testsuite><testcase classname="k" name="a"><failure>`, "é&lt;", `</failure></testcase><testcase classname="k" name="b"/></testsuite>`,
			merge(all(StatusFail, "k.a"), all(StatusPass, "k.b"))},
		{"junit attribute", FormatJUnitXML, `<testsuite><testcase classname="k" name="a"><failure message="`, "ab&amp;", `"/></testcase></testsuite>`,
			all(StatusFail, "k.a")},
		{"junit CDATA", FormatJUnitXML, `<testsuite><testcase classname="k" name="a"><failure><![CDATA[`, "] ]>", `]]></failure></testcase></testsuite>`,
			all(StatusFail, "k.a")},
		{"tap name", FormatTAP, "1..2\nok 1 - ", "y", "\nok 2 - b\n", nil},
		{"cargo line", FormatCargoTest, "running 2 tests\ntest a ... ", "z", "\nok\ntest b ... ok\ntest result: ok.\n",
			all(StatusPass, "a", "b")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &stream{prefix: c.prefix, filler: c.filler, suffix: c.suffix, n: hundredMB}
			var rep Report
			var err error
			alloc := allocated(func() { rep, err = Parse(c.format, s, 2*hundredMB) })
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if alloc > 16<<20 {
				t.Errorf("allocated %d MB for a 100 MB line", alloc>>20)
			} else {
				t.Logf("allocated %d KB", alloc>>10)
			}
			if c.want != nil {
				checkResults(t, rep, c.want)
			}
			for _, r := range rep.Results {
				if len(r.Name) > MaxNameBytes || len(r.Message) > MaxMessageBytes {
					t.Errorf("name %d bytes, message %d", len(r.Name), len(r.Message))
				}
			}
			if c.format == FormatTAP {
				if rep.Pass != 2 || !strings.HasPrefix(rep.Results[0].Name, "yyyy") || !strings.Contains(rep.Results[0].Name, "…#") {
					t.Errorf("report %+v", rep)
				}
			}
		})
	}
}
