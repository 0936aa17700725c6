package pages

import (
	"net/url"
	"testing"
)

// TestTemplateFormRows: the criteria and held-out rows of a posted form are read in
// order with blank rows dropped, so that Validate's error for a row names the input
// the re-shown form gives that row; a remove op takes the row out.
func TestTemplateFormRows(t *testing.T) {
	form := url.Values{
		"name": {"t"}, "steps[0].role": {"dev"}, "steps[0].brief": {"b"}, "steps[0].verification.type": {"verifiable"},
		"steps[0].verification.criteria[0].activity": {"unit-test"}, "steps[0].verification.criteria[0].description": {"tests pass"},
		"steps[0].verification.criteria[1].activity": {" "}, "steps[0].verification.criteria[1].timing": {""},
		"steps[0].verification.criteria[2].activity": {""}, "steps[0].verification.criteria[2].description": {"no activity"},
		"steps[0].verification.held_out[0].path": {""}, "steps[0].verification.held_out[0].content": {""},
		"steps[0].verification.held_out[1].path": {"x_test.go"}, "steps[0].verification.held_out[1].content": {"package x\r\n"},
		// Past a missing row nothing is read.
		"steps[0].verification.criteria[4].activity": {"lint"},
	}
	f := parseTemplateForm(form)
	s := f.Steps[0]
	if crit, held := s.Verification.Rows["verification.criteria"], s.Verification.Rows["verification.held_out"]; len(crit) != 2 ||
		crit[1]["description"] != "no activity" || len(held) != 1 || held[0]["path"] != "x_test.go" {
		t.Fatalf("rows %+v", s.Verification.Rows)
	}
	tpl, fe := templateFromForm(f)
	if len(fe) > 0 {
		t.Fatalf("form errors %v", fe)
	}
	if v := tpl.Steps[0].Verification; len(v.Criteria) != 2 || len(v.HeldOut) != 1 || v.HeldOut[0].Content != "package x\n" {
		t.Fatalf("verification %+v", v)
	}
	errs := formErrorKeys(fieldErrors(tpl.Validate()))
	if len(errs) != 1 || errs["steps[0].verification.criteria[1].activity"] != "is required" {
		t.Fatalf("errors %v", errs)
	}
	if _, err := applyOp(&f, "remove-criterion:0:1"); err != nil || len(f.Steps[0].Verification.Rows["verification.criteria"]) != 1 {
		t.Fatalf("remove-criterion: %v %+v", err, f.Steps[0].Verification.Rows)
	}
	for _, op := range []string{"remove-criterion:0:1", "remove-held-out:0:1", "remove-stack:0:0", "remove-criterion:0"} {
		if _, err := applyOp(&f, op); err == nil {
			t.Errorf("%s: no error", op)
		}
	}
}
