// Package testresults reads the structured results of test runners (go test -json,
// JUnit XML as pytest, vitest and mocha write it, TAP as node --test prints it,
// jest's --json report, cargo test's plain output) into one shape, and holds a later run to the tests that passed at a base
// revision: the test floor.
//
// Everything it reads comes from a test binary that the worker under judgement may
// have changed, so every reader is bounded: Parse reads at most max bytes, keeps at
// most a bounded part of any one line, name or message, and never panics.
package testresults

import (
	"errors"
	"fmt"
	"io"
)

// Status of one test.
type Status string

// The statuses a test can end with. A test that started but never reported a
// result (the binary exited, the output was cut) is StatusFail.
const (
	StatusPass Status = "pass"
	StatusFail Status = "fail"
	StatusSkip Status = "skip"
)

// Formats that Parse reads.
const (
	FormatGoTestJSON = "go-test-json"
	FormatJUnitXML   = "junit-xml"
	FormatTAP        = "tap"
	FormatCargoTest  = "cargo-test"
)

// Formats lists the formats Parse reads, in a stable order.
var Formats = []string{FormatGoTestJSON, FormatJUnitXML, FormatTAP, FormatCargoTest, FormatJestJSON}

// Bounds on what Parse keeps.
const (
	// DefaultMax is the byte bound Parse uses when it is given max <= 0.
	DefaultMax = 64 << 20
	// MaxNameBytes bounds a test's name; a longer name is cut and given a hash of
	// the whole, so that two long names stay apart and the same name compares equal.
	MaxNameBytes = 1024
	// MaxMessageBytes and MaxMessageLines bound a Result's Message.
	MaxMessageBytes = 2048
	MaxMessageLines = 20
	// maxLineBytes bounds the part of one input line that a line-based reader looks
	// at; the rest of a longer line is read and dropped.
	maxLineBytes = 64 << 10
)

// ErrTruncated is returned (wrapped) by Parse, together with the report of what was
// read, when the input is longer than max. Report.Truncated says the same.
var ErrTruncated = errors.New("test results truncated")

// Result is one test's outcome. Name is fully qualified so that the same test at the
// base revision and in the judge's view compare equal: for Go "pkg/path.TestName/sub",
// for JUnit "classname.name" (or "file::name", or the enclosing suites' names joined
// by "/" when there is no classname), for TAP the descriptions of the enclosing
// subtests and the test joined by " > " (a repeated name gets " [2]", " [3]", ... in
// the order the tests reported), for cargo the test path "module::test".
type Result struct {
	Name    string `json:"name"`
	Status  Status `json:"status"`
	Message string `json:"message,omitempty"` // first lines of the failure, bounded
}

// Report is one run's results with their counts. Results are in the order the tests
// reported; a name appears once (for go test, JUnit and cargo a repeated name is
// merged into its worst outcome: fail over skip over pass).
type Report struct {
	Format    string   `json:"format"`
	Results   []Result `json:"results"`
	Pass      int      `json:"pass"`
	Fail      int      `json:"fail"`
	Skip      int      `json:"skip"`
	Truncated bool     `json:"truncated,omitempty"` // the input was longer than max
}

// Parse reads r in format (one of Formats), reading at most max bytes (DefaultMax
// when max <= 0; one more byte is read to tell whether there was more). On a longer
// input it returns the report of what it read, with Truncated set, and an error
// wrapping ErrTruncated; a test cut off mid-way counts as failed. It reads up to max
// bytes even when the results end earlier. Input that is not
// the format at all gives an empty report, and for JUnit XML an error naming the
// syntax error (with the results read before it).
func Parse(format string, r io.Reader, max int64) (Report, error) {
	if max <= 0 {
		max = DefaultMax
	}
	var parse func(*limitReader, *collector) error
	var c *collector
	switch format {
	case FormatGoTestJSON:
		parse, c = parseGoTest, newCollector(format, false)
	case FormatJUnitXML:
		parse, c = parseJUnit, newCollector(format, false)
	case FormatTAP:
		parse, c = parseTAP, newCollector(format, true)
	case FormatCargoTest:
		parse, c = parseCargo, newCollector(format, false)
	case FormatJestJSON:
		parse, c = parseJestJSON, newCollector(format, false)
	default:
		return Report{Format: format}, fmt.Errorf("testresults: unknown format %q (want one of %v)", format, Formats)
	}
	lr := &limitReader{r: r, left: max}
	err := parse(lr, c)
	// A reader may stop early (a syntax error, "Bail out!"): read the rest up to max
	// so that Truncated says whether the input was longer, and the writer of a pipe
	// is not left blocked.
	_, _ = io.Copy(io.Discard, lr)
	rep := c.report()
	rep.Truncated = lr.truncated
	if err == nil && lr.err != nil {
		err = lr.err
	}
	if lr.truncated {
		return rep, fmt.Errorf("testresults: %s: read the first %d bytes: %w", format, max, ErrTruncated)
	}
	if err != nil {
		return rep, fmt.Errorf("testresults: %s: %w", format, err)
	}
	return rep, nil
}

// limitReader reads at most left bytes of r and then probes for one more to tell a
// cut input from one that ended. A read error of r is kept in err and reported as
// the end of the input.
type limitReader struct {
	r         io.Reader
	left      int64
	truncated bool
	err       error
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.truncated || l.err != nil {
		return 0, io.EOF
	}
	if l.left <= 0 {
		var probe [1]byte
		for {
			n, err := l.r.Read(probe[:])
			if n > 0 {
				l.truncated = true
				return 0, io.EOF
			}
			if err != nil {
				if err != io.EOF {
					l.err = err
				}
				return 0, io.EOF
			}
		}
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if err != nil && err != io.EOF {
		l.err = err
		err = io.EOF
	}
	return n, err
}

// collector gathers results in the order they report, merging or numbering repeats.
type collector struct {
	format  string
	number  bool // number repeated names instead of merging them
	results []Result
	index   map[string]int
	seen    map[string]int
}

func newCollector(format string, number bool) *collector {
	return &collector{format: format, number: number, index: map[string]int{}, seen: map[string]int{}}
}

// severity orders statuses for merging repeats: the worst outcome wins.
func severity(s Status) int {
	switch s {
	case StatusFail:
		return 2
	case StatusSkip:
		return 1
	}
	return 0
}

func (c *collector) add(name string, st Status, msg string) {
	name = boundName(name)
	if c.number {
		c.seen[name]++
		if n := c.seen[name]; n > 1 {
			name = boundName(fmt.Sprintf("%s [%d]", name, n))
		}
	}
	if i, ok := c.index[name]; ok {
		r := &c.results[i]
		if severity(st) > severity(r.Status) {
			r.Status = st
			if msg != "" {
				r.Message = msg
			}
		}
		return
	}
	c.index[name] = len(c.results)
	c.results = append(c.results, Result{Name: name, Status: st, Message: msg})
}

// setMessage gives a result reported earlier its message, if it has none.
func (c *collector) setMessage(name, msg string) {
	if i, ok := c.index[boundName(name)]; ok && c.results[i].Message == "" {
		c.results[i].Message = msg
	}
}

func (c *collector) report() Report {
	rep := Report{Format: c.format, Results: c.results}
	if rep.Results == nil {
		rep.Results = []Result{}
	}
	for _, r := range rep.Results {
		switch r.Status {
		case StatusPass:
			rep.Pass++
		case StatusFail:
			rep.Fail++
		case StatusSkip:
			rep.Skip++
		}
	}
	return rep
}
