package testresults

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
)

// FormatJestJSON is jest's --json report (vitest's json reporter writes the same
// shape).
const FormatJestJSON = "jest-json"

// jestSuite is one test file of a jest --json report.
type jestSuite struct {
	Name             string `json:"name"`
	Status           string `json:"status"`
	Message          string `json:"message"`
	AssertionResults []struct {
		AncestorTitles  []string `json:"ancestorTitles"`
		Title           string   `json:"title"`
		Status          string   `json:"status"`
		FailureMessages []string `json:"failureMessages"`
	} `json:"assertionResults"`
}

// parseJestJSON reads jest's --json report: an object whose "testResults" array
// holds a suite per test file, read one suite at a time. A test's name is its
// enclosing describe blocks' titles and its own joined by " > " (no file: jest
// writes absolute paths, which differ between the base's run and the judge's); a
// name repeated across files is merged into its worst outcome. A suite that failed
// without a test result (it did not load) is a failed result named by its file.
func parseJestJSON(lim *limitReader, c *collector) error {
	d := json.NewDecoder(lim)
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return errors.New("not a jest JSON report: no top-level object")
	}
	for d.More() {
		key, err := d.Token()
		if err != nil {
			return jestErr(lim, err)
		}
		if key != "testResults" {
			var skip json.RawMessage
			if err := d.Decode(&skip); err != nil {
				return jestErr(lim, err)
			}
			continue
		}
		if tok, err := d.Token(); err != nil || tok != json.Delim('[') {
			return jestErr(lim, fmt.Errorf("testResults is not an array"))
		}
		for d.More() {
			var s jestSuite
			if err := d.Decode(&s); err != nil {
				return jestErr(lim, err)
			}
			addJestSuite(c, s)
		}
		if _, err := d.Token(); err != nil {
			return jestErr(lim, err)
		}
	}
	return nil
}

func jestErr(lim *limitReader, err error) error {
	if lim.truncated {
		return nil // Parse reports the truncation
	}
	return fmt.Errorf("not a jest JSON report: %w", err)
}

func addJestSuite(c *collector, s jestSuite) {
	for _, a := range s.AssertionResults {
		name := strings.Join(append(append([]string(nil), a.AncestorTitles...), a.Title), " > ")
		st, msg := jestStatus(a.Status), ""
		if st == StatusFail {
			var m message
			for _, fm := range a.FailureMessages {
				m.addText(fm)
			}
			if m.lines == 0 {
				m.addLine("status " + a.Status)
			}
			msg = m.String()
		}
		c.add(name, st, msg)
	}
	if len(s.AssertionResults) == 0 && s.Status != "passed" && s.Status != "pending" {
		var m message
		m.addText(s.Message)
		c.add(path.Base(s.Name)+" (the test file did not run)", StatusFail, m.String())
	}
}

// jestStatus maps jest's statuses; one it does not know (a forged or newer one)
// fails rather than passes.
func jestStatus(s string) Status {
	switch s {
	case "passed":
		return StatusPass
	case "pending", "skipped", "todo", "disabled":
		return StatusSkip
	}
	return StatusFail
}
