package pages_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestAdvisoryCriteriaErrorNamesItsLine: blank lines are not criteria, so the
// service's error on the second criterion, written on line 4 after two blank lines,
// names line 4 — the line the person wrote — and not line 2; a line without the colon
// after a blank line is named by its own number too.
func TestAdvisoryCriteriaErrorNamesItsLine(t *testing.T) {
	e := newEnv(t, "sqlite")
	e.team()
	tasks, _ := e.promptAll("Investigate why checkout is slow")
	ex := e.browser().login("exec")
	path := "/tasks/" + advID(tasks[0].ID) + "/advisory/make_verifiable"

	pg := ex.post(path, url.Values{"criteria": {"unit-test: tests pass\r\n\r\n\r\nlint:"}})
	if pg.Status != http.StatusUnprocessableEntity || !strings.Contains(pg.Body, "line 4 description is required") ||
		strings.Contains(pg.Body, "line 2 description") {
		t.Fatalf("criterion without description on line 4: %d, error %q", pg.Status, fieldError(pg.Body))
	}
	pg = ex.post(path, url.Values{"criteria": {"\nunit-test: tests pass\n\nlint the code"}})
	if pg.Status != http.StatusUnprocessableEntity || !strings.Contains(pg.Body, "line 4: write it as activity: description") {
		t.Fatalf("line 4 without a colon: %d, error %q", pg.Status, fieldError(pg.Body))
	}
}

// fieldError is the text around the first field error of page, for a failure message.
func fieldError(page string) string {
	i := strings.Index(page, "field-error")
	if i < 0 {
		return ""
	}
	return page[i:min(len(page), i+200)]
}
