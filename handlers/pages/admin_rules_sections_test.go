package pages_test

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/pages/rules"
)

// sectionValues are the values the rules page's form of section id posts, as a
// browser sends them when its Save is pressed.
func sectionValues(t *testing.T, body, id string) url.Values {
	t.Helper()
	k := strings.Index(body, `data-testid="rules-form-`+id+`"`)
	if k < 0 {
		t.Fatalf("no form of section %s", id)
	}
	start := strings.LastIndex(body[:k], "<form")
	v := formValues(t, body[start:start+strings.Index(body[start:], "</form>")+len("</form>")], "/rules")
	if got := v["section"]; len(got) != 1 || got[0] != id {
		t.Fatalf("the form of section %s posts section=%v", id, got)
	}
	return v
}

// TestRulesPageSections: the rules page is one form per section, with a nav of links
// to them; saving a section changes its fields only: values typed in another
// section's inputs are ignored and that section's stored values stay as they were; a
// refused section (422) shows its error inside it, keeps what was typed and shows
// the other sections as stored.
func TestRulesPageSections(t *testing.T) {
	t.Parallel()
	e := newAdmEnv(t, pagesLocal)
	ctx := context.Background()
	c := e.login("eve")
	page := c.get("/rules")
	page.want(t, http.StatusOK, `data-testid="rules-nav"`)
	for _, s := range rules.Sections {
		page.want(t, http.StatusOK, `href="#section-`+s.ID+`"`, `id="section-`+s.ID+`"`, `data-testid="rules-save-`+s.ID+`"`)
	}
	if n := strings.Count(page.Body, `action="/rules"`); n != len(rules.Sections) {
		t.Fatalf("%d forms post to /rules, want one per section (%d)", n, len(rules.Sections))
	}
	c.post("/rules", formValues(t, page.Body, "/rules")).want(t, http.StatusSeeOther) // store the defaults
	before, err := e.db.GetRules(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Save the classification: the words change, nothing else does, even an input of
	// another section sent along.
	page = c.get("/rules")
	words := sectionValues(t, page.Body, "classification")
	if _, ok := words["activities[0].name"]; ok {
		t.Fatal("the classification's form carries the activities")
	}
	words["skip_words"] = []string{"typo\nchore"}
	words["activities[0].command"] = []string{"echo not mine"}
	words["prices"] = []string{"- pattern: x\n  input_per_mtok: 1\n"}
	c.post("/rules", words).want(t, http.StatusSeeOther)
	after, _ := e.db.GetRules(ctx)
	if strings.Join(after.SkipWords, ",") != "typo,chore" {
		t.Fatalf("skip words not saved: %v", after.SkipWords)
	}
	want := *before
	want.SkipWords, want.UpdatedAt = after.SkipWords, after.UpdatedAt
	if !reflect.DeepEqual(*after, want) {
		t.Fatalf("saving the classification changed another section:\ngot  %+v\nwant %+v", *after, want)
	}
	c.get("/rules").want(t, http.StatusOK, "Saved the project rules&#39; classification")

	// A refused stacks section: 422, its error inside its own form, what was typed
	// kept; the other sections shown as stored, nothing saved.
	page = c.get("/rules")
	bad := sectionValues(t, page.Body, "stacks")
	bad["stacks"] = []string{"- name: go\n  detcet: []\n"}
	res := c.post("/rules", bad)
	res.want(t, http.StatusUnprocessableEntity, `data-testid="rules-errors"`, `href="#section-stacks"`, `data-testid="section-errors-stacks"`, "detcet")
	assertFieldError(t, res.Body, "stacks", "not a YAML list of stacks")
	if form := regexp.MustCompile(`(?s)id="section-stacks".*?</form>`).FindString(res.Body); !strings.Contains(form, `data-testid="stacks-error"`) {
		t.Fatal("the stacks' error is not inside the stacks' form")
	}
	if strings.Contains(res.Body, `data-testid="section-errors-classification"`) {
		t.Fatal("a section not posted shows errors")
	}
	if got := formValues(t, res.Body, "/rules").Get("skip_words"); got != "typo\nchore" {
		t.Fatalf("the other sections are not shown as stored: skip words %q", got)
	}
	if again, _ := e.db.GetRules(ctx); !reflect.DeepEqual(again, after) {
		t.Fatal("a refused section changed the rules")
	}

	// An unknown section is a bad request.
	c.post("/rules", url.Values{"section": {"nosuch"}}).want(t, http.StatusBadRequest)
}

// TestRulesSectionsCoverTheForm: every field of the rules form is in exactly one
// section, and names a field of the stored rules of the same type.
func TestRulesSectionsCoverTheForm(t *testing.T) {
	seen := map[string]string{}
	stored := reflect.TypeFor[models.ProjectRules]()
	for _, s := range rules.Sections {
		for _, f := range s.Fields {
			if other, dup := seen[f]; dup {
				t.Errorf("%s is in sections %s and %s", f, other, s.ID)
			}
			seen[f] = s.ID
			if _, ok := stored.FieldByName(f); !ok {
				t.Errorf("section %s: the rules have no field %s", s.ID, f)
			}
		}
		for _, in := range s.Inputs {
			if rules.SectionOf(in+"[0].x") != s.ID {
				t.Errorf("input %s is not found in section %s", in, s.ID)
			}
		}
	}
	for f := range reflect.TypeFor[rules.Form]().Fields() {
		if seen[f.Name] == "" {
			t.Errorf("the form's %s is in no section", f.Name)
		}
	}
}
