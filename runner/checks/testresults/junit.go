package testresults

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// maxXMLDepth bounds the nesting of elements; deeper input is not a test report.
const maxXMLDepth = 256

// junitCase is the <testcase> being read.
type junitCase struct {
	name   string
	status Status
	msg    message
	inFail bool // inside its <failure> or <error>
}

// parseJUnit reads JUnit XML with encoding/xml's streaming Token, through an
// xmlLimiter so that no text node or attribute is held whole. Any <testcase> at any
// depth is a test; <failure> and <error> make it fail, <skipped> skip (pytest's xfail
// included). A <testcase> cut off by the end of the input counts as failed.
func parseJUnit(lim *limitReader, c *collector) error {
	d := xml.NewDecoder(newXMLLimiter(lim))
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	var suites []string // names of the enclosing <testsuite>s
	var tc *junitCase
	caseDepth, depth := 0, 0
	for {
		tok, err := d.Token()
		if err != nil {
			if tc != nil {
				tc.msg.addLine("the report ended inside this test case")
				c.add(tc.name, StatusFail, tc.msg.String())
			}
			switch {
			case err == io.EOF:
				return nil
			case errors.Is(err, errMarkupTooLong):
				return err
			case lim.truncated:
				return nil
			}
			return fmt.Errorf("not well-formed XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth > maxXMLDepth {
				return fmt.Errorf("XML nested deeper than %d elements", maxXMLDepth)
			}
			switch name := t.Name.Local; {
			case tc == nil && name == "testsuite":
				suites = append(suites, attr(t, "name"))
			case tc == nil && name == "testcase":
				tc, caseDepth = &junitCase{name: junitName(t, suites), status: StatusPass}, depth
			case tc != nil && depth == caseDepth+1 && (name == "failure" || name == "error"):
				tc.status, tc.inFail = StatusFail, true
				if m := attr(t, "message"); m != "" {
					tc.msg.addText(m)
				}
			case tc != nil && depth == caseDepth+1 && name == "skipped" && tc.status != StatusFail:
				tc.status = StatusSkip
				if m := attr(t, "message"); m != "" {
					tc.msg.addText(m)
				}
			}
		case xml.EndElement:
			switch {
			case tc != nil && depth == caseDepth:
				msg := ""
				if tc.status != StatusPass {
					msg = tc.msg.String()
				}
				c.add(tc.name, tc.status, msg)
				tc = nil
			case tc != nil && depth == caseDepth+1:
				tc.inFail = false
			case tc == nil && t.Name.Local == "testsuite" && len(suites) > 0:
				suites = suites[:len(suites)-1]
			}
			depth--
		case xml.CharData:
			if tc != nil && tc.inFail {
				if text := strings.TrimSpace(string(t)); text != "" {
					tc.msg.addText(text)
				}
			}
		}
	}
}

// junitName qualifies a test case: "classname.name", else "file::name" (pytest),
// else the enclosing suites' names joined by "/" and ".name".
func junitName(t xml.StartElement, suites []string) string {
	name := attr(t, "name")
	if cls := attr(t, "classname"); cls != "" {
		return cls + "." + name
	}
	if file := attr(t, "file"); file != "" {
		return file + "::" + name
	}
	var path []string
	for _, s := range suites {
		if s != "" {
			path = append(path, s)
		}
	}
	if len(path) > 0 {
		return strings.Join(path, "/") + "." + name
	}
	return name
}

func attr(t xml.StartElement, name string) string {
	for _, a := range t.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}
