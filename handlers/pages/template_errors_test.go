package pages_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestTemplateEditorErrorWords: a refused save (422) says where each error is in the
// words of the form: "Step 4 “Write the guide” — Max attempts: must be …" in the
// summary, the steps numbered from 1 as their summary lines are, the field's label
// from the contract's words; beside the field, the message alone, the field's name
// not repeated in it; and every value is shown back as typed.
func TestTemplateEditorErrorWords(t *testing.T) {
	t.Parallel()
	e := newAdmEnv(t, pagesLocal)
	saveTemplate(t, e, "four", 4)
	c := e.login("eve")
	page := c.get("/templates/four")
	res := editorOp(t, c, page, "/templates/four", map[string]string{
		"steps[3].name": "Write the guide", "steps[3].completion.max_attempts": "0",
		"steps[1].completion.timeout": "soon", "steps[0].verification.criteria[0].description": "",
	}, "save")
	res.want(t, http.StatusUnprocessableEntity, `value="Write the guide"`, `value="0"`, `value="soon"`)

	summary := htmlText(t, res.Body, `data-testid="error-summary"`)
	for _, want := range []string{
		"Step 1 “Part 1” — Criterion 1, Description: is required",
		"Step 2 “Part 2” — Timeout: not a duration like 30m",
		"Step 4 “Write the guide” — Max attempts: must be at least 1 (leave it empty for the default, 2)",
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("the summary lacks %q:\n%s", want, summary)
		}
	}
	if i, j := strings.Index(summary, "Step 2"), strings.Index(summary, "Step 4"); i > j {
		t.Error("the summary does not list the steps in order")
	}
	for _, raw := range []string{"steps[", "max_attempts", "timeout:", "completion."} {
		if strings.Contains(summary, raw) {
			t.Errorf("the summary shows %q: %s", raw, summary)
		}
	}
	if !strings.Contains(res.Body, `href="#f-steps-3-completion-max-attempts"`) {
		t.Error("the summary does not link to the field")
	}
	assertFieldError(t, res.Body, "steps[3].completion.max_attempts", "must be at least 1")
	assertFieldError(t, res.Body, "steps[1].completion.timeout", "not a duration like 30m")
	for _, name := range []string{"steps[3].completion.max_attempts", "steps[1].completion.timeout"} {
		if msg := fieldErrorText(res.Body, name); strings.Contains(msg, "max_attempts") || strings.Contains(msg, "timeout:") {
			t.Errorf("the error beside %s repeats the field's name: %q", name, msg)
		}
	}
}

// htmlText is the text of the element whose opening tag holds attr, its tags removed.
func htmlText(t *testing.T, body, attr string) string {
	t.Helper()
	k := strings.Index(body, attr)
	if k < 0 {
		t.Fatalf("no %s:\n%s", attr, excerpt(body))
	}
	end := strings.Index(body[k:], "</div></div>")
	if end < 0 {
		end = len(body) - k
	}
	return unescape(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(body[k:k+end], ""))
}

// fieldErrorText is the message beside input name.
func fieldErrorText(body, name string) string {
	id := `data-testid="` + name + `-error">`
	k := strings.Index(body, id)
	if k < 0 {
		return ""
	}
	rest := body[k+len(id):]
	return unescape(rest[:strings.Index(rest, "<")])
}
