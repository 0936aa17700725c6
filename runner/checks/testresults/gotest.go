package testresults

import (
	"encoding/json"
	"strings"
)

// goEvent is the part of a test2json event that the floor needs.
type goEvent struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// goTest is a test that has started and not yet ended.
type goTest struct {
	msg message
}

// goState follows one go test -json stream. Tests of different packages and
// parallel tests interleave; each is keyed by package and name.
type goState struct {
	c        *collector
	running  map[string]*goTest
	order    map[string][]string // package: its tests that started, in order
	pkgs     []string            // packages, in the order they started tests
	reported map[string]Status
	// failedTests: packages with a failed test, so that a package's own failure is
	// recorded only when no test explains it.
	failedTests map[string]bool
}

func goKey(pkg, test string) string { return pkg + "\x00" + test }

func goName(pkg, test string) string {
	if pkg == "" {
		return test
	}
	return pkg + "." + test
}

// parseGoTest reads go test -json: one event a line. Package-level events are not
// tests. A test counts as passed or skipped only if its "--- PASS" or "--- SKIP"
// line was printed: test2json also ends a test that was still running when the
// binary exited (syscall.Exit(0) in a test) with the package's own result, and a
// test that started and never ended at all counts as failed.
func parseGoTest(lim *limitReader, c *collector) error {
	s := &goState{c: c, running: map[string]*goTest{}, order: map[string][]string{}, reported: map[string]Status{}, failedTests: map[string]bool{}}
	lr := newLineReader(lim)
	for {
		line, ok := lr.next()
		if !ok {
			break
		}
		var e goEvent
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			continue // not an event: the go command's own output, a cut line
		}
		s.event(e)
	}
	why := "did not report a result: the output ended"
	if lim.truncated {
		why = "did not report a result: the output was cut"
	}
	for _, pkg := range s.pkgs {
		s.endRunning(pkg, why)
	}
	return nil
}

func (s *goState) event(e goEvent) {
	switch e.Action {
	case "run":
		if e.Test == "" {
			return
		}
		k := goKey(e.Package, e.Test)
		if _, ok := s.running[k]; !ok {
			s.running[k] = &goTest{}
			if _, ok := s.order[e.Package]; !ok {
				s.pkgs = append(s.pkgs, e.Package)
			}
			s.order[e.Package] = append(s.order[e.Package], e.Test)
		}
	case "output":
		s.output(e)
	case "pass", "fail", "skip":
		if e.Test == "" {
			why := "did not report a result: the test binary exited (the package's result: " + e.Action + ")"
			failed := s.endRunning(e.Package, why)
			if e.Action == "fail" && !failed && !s.failedTests[e.Package] {
				// The package failed with no test failing: it did not build, or its
				// TestMain or init failed. That is a failure of the run, never nothing.
				s.c.add(e.Package+" (package failed)", StatusFail, "the package failed without a failing test: it did not build, or its TestMain or init failed")
			}
			return
		}
		s.end(e)
	}
}

// output records a report line ("--- PASS: TestX (0.00s)") wherever test2json put it,
// and keeps the first lines of a running test's output for its message.
func (s *goState) output(e goEvent) {
	for _, line := range strings.Split(strings.TrimSuffix(e.Output, "\n"), "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if name, st, ok := goReportLine(trimmed); ok {
			s.reported[goKey(e.Package, name)] = st
			if name == e.Test {
				continue
			}
		}
		if e.Test == "" || strings.HasPrefix(trimmed, "=== ") {
			continue
		}
		if t := s.running[goKey(e.Package, e.Test)]; t != nil {
			t.msg.addLine(line)
		}
	}
}

var goReportPrefixes = []struct {
	prefix string
	status Status
}{{"--- PASS: ", StatusPass}, {"--- FAIL: ", StatusFail}, {"--- SKIP: ", StatusSkip}}

// goReportLine parses "--- PASS: name (0.00s)", the line the testing package prints
// when a test ends.
func goReportLine(line string) (name string, st Status, ok bool) {
	for _, p := range goReportPrefixes {
		if rest, found := strings.CutPrefix(line, p.prefix); found {
			if i := strings.LastIndex(rest, " ("); i >= 0 {
				return rest[:i], p.status, true
			}
			return rest, p.status, true
		}
	}
	return "", "", false
}

func (s *goState) end(e goEvent) {
	k := goKey(e.Package, e.Test)
	t := s.running[k]
	if t == nil {
		t = &goTest{}
	}
	delete(s.running, k)
	st := Status(e.Action)
	seen, printed := s.reported[k]
	delete(s.reported, k)
	msg := ""
	switch {
	case st != StatusFail && (!printed || seen != st):
		st = StatusFail
		var m message
		m.addLine("reported " + e.Action + " without its \"--- " + strings.ToUpper(e.Action) + "\" line: the test binary exited during the test")
		m.addText(t.msg.String())
		msg = m.String()
	case st != StatusPass:
		msg = t.msg.String()
	}
	if st == StatusFail {
		s.failedTests[e.Package] = true
	}
	s.c.add(goName(e.Package, e.Test), st, msg)
}

// endRunning fails the tests of pkg that started and have not ended, and reports
// whether there were any.
func (s *goState) endRunning(pkg, why string) bool {
	failed := false
	for _, test := range s.order[pkg] {
		k := goKey(pkg, test)
		t, ok := s.running[k]
		if !ok {
			continue
		}
		delete(s.running, k)
		var m message
		m.addLine(why)
		m.addText(t.msg.String())
		s.c.add(goName(pkg, test), StatusFail, m.String())
		failed = true
	}
	s.order[pkg] = s.order[pkg][:0]
	return failed
}
