package testresults

import (
	"strconv"
	"strings"
)

// cargoState follows cargo test's plain output: for each test binary a "running N
// tests" line, one "test path ... ok|FAILED|ignored" line a test, a "failures:"
// section with each failed test's captured output, and a "test result:" line.
type cargoState struct {
	c        *collector
	inRun    bool
	planned  int
	reported int
	runs     int
	pending  []string // tests whose line began ("test x ... ") without a result
	failures bool     // inside the "failures:" section: test output, not results
	failName string   // the test whose "---- x stdout ----" is being read
	failMsg  message
}

// parseCargo reads cargo test's output (stdout, or stdout and stderr together). A
// test whose line began and never ended (the binary exited during it) and the
// tests a "running N tests" line announced that never reported count as failed.
// Lines inside the failures section are the tests' own output and are not read as
// results, and a name reported twice keeps its worst result, so output that
// imitates a result line cannot turn a failure into a pass.
func parseCargo(lim *limitReader, c *collector) error {
	s := &cargoState{c: c}
	lr := newLineReader(lim)
	for {
		raw, ok := lr.next()
		if !ok {
			break
		}
		s.line(string(raw))
	}
	s.endRun()
	return nil
}

func (s *cargoState) line(line string) {
	line = strings.TrimRight(line, " \r")
	if n, ok := cargoRunning(line); ok {
		s.endRun()
		s.inRun, s.planned, s.runs = true, n, s.runs+1
		return
	}
	if !s.inRun {
		return
	}
	if strings.HasPrefix(line, "test result: ") {
		s.endRun()
		return
	}
	if s.failures {
		switch {
		case line == "failures:":
			s.endFailure()
		case strings.HasPrefix(line, "---- ") && strings.HasSuffix(line, " ----"):
			s.endFailure()
			name := strings.TrimSuffix(strings.TrimPrefix(line, "---- "), " ----")
			name = strings.TrimSuffix(name, " stdout")
			s.failName = strings.TrimSuffix(name, " stderr")
		case s.failName != "":
			s.failMsg.addLine(line)
		}
		return
	}
	if line == "failures:" {
		s.failures = true
		return
	}
	if len(s.pending) > 0 {
		// "test x ... " then the test's own output, then its result alone on a line.
		if st, ok := cargoStatus(line); ok {
			s.result(s.pending[0], st)
			s.pending = s.pending[1:]
			return
		}
	}
	rest, ok := strings.CutPrefix(line, "test ")
	if !ok {
		return
	}
	name, status, ok := strings.Cut(rest, " ...")
	if !ok {
		return
	}
	name = strings.TrimSuffix(name, " - should panic")
	if st, ok := cargoStatus(strings.TrimSpace(status)); ok {
		s.result(name, st)
		return
	}
	s.pending = append(s.pending, name)
}

// cargoRunning parses "running 5 tests" and "running 1 test".
func cargoRunning(line string) (int, bool) {
	rest, ok := strings.CutPrefix(line, "running ")
	if !ok {
		return 0, false
	}
	num, unit, ok := strings.Cut(rest, " ")
	if !ok || (unit != "tests" && unit != "test") {
		return 0, false
	}
	n, err := strconv.Atoi(num)
	return n, err == nil && n >= 0
}

// cargoStatus maps "ok", "FAILED", "ignored" (", reason") and "bench: ..." to a
// status.
func cargoStatus(s string) (Status, bool) {
	switch {
	case s == "ok" || strings.HasPrefix(s, "bench:"):
		return StatusPass, true
	case s == "FAILED":
		return StatusFail, true
	case s == "ignored" || strings.HasPrefix(s, "ignored, "):
		return StatusSkip, true
	}
	return "", false
}

func (s *cargoState) result(name string, st Status) {
	s.reported++
	s.c.add(name, st, "")
}

func (s *cargoState) endFailure() {
	if s.failName != "" {
		s.c.setMessage(s.failName, s.failMsg.String())
	}
	s.failName, s.failMsg = "", message{}
}

// endRun closes a test binary's run: tests begun and never ended, and tests
// announced and never reported, fail.
func (s *cargoState) endRun() {
	if !s.inRun {
		return
	}
	s.endFailure()
	for _, name := range s.pending {
		s.reported++
		s.c.add(name, StatusFail, "did not report a result: the test binary exited during the test")
	}
	if s.planned > s.reported {
		var m message
		m.addLine("\"running " + strconv.Itoa(s.planned) + " tests\" announced them; " + strconv.Itoa(s.reported) + " reported")
		s.c.add("(tests not reported in test run "+strconv.Itoa(s.runs)+")", StatusFail, m.String())
	}
	s.inRun, s.failures, s.pending, s.planned, s.reported = false, false, nil, 0, 0
}
