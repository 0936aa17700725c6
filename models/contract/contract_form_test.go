package contract

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestCompletionFormCoversEveryField: every exported field of Completion (and of
// the checklist it points to) and of Review has an input, named by its YAML path,
// with a label.
func TestCompletionFormCoversEveryField(t *testing.T) {
	byName := map[string]FormField{}
	for _, f := range append(slices.Clone(CompletionFormFields()), ReviewFormFields()...) {
		if f.Label == "" || f.Kind == "" {
			t.Errorf("%s: no label or kind: %+v", f.Name, f)
		}
		byName[f.Name] = f
	}
	var walk func(reflect.Type, string)
	walk = func(typ reflect.Type, prefix string) {
		for f := range typ.Fields() {
			if !f.IsExported() {
				continue
			}
			key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if f.Type.Kind() == reflect.Pointer {
				walk(f.Type.Elem(), prefix+key+".")
				continue
			}
			if _, ok := byName[prefix+key]; !ok {
				t.Errorf("Completion field %s has no form input %q", f.Name, prefix+key)
			}
		}
	}
	walk(reflect.TypeFor[Completion](), "completion.")
	walk(reflect.TypeFor[Review](), "review.")
	if f := byName["completion.type"]; f.Kind != FormSelect || len(f.Options) != 4 {
		t.Errorf("type: %+v", f)
	}
	if byName["completion.verify"].Kind != FormLines || byName["completion.timeout"].Kind != FormDuration ||
		byName["completion.checklist.count"].Kind != FormNumber || byName["completion.clean"].Kind != FormCheckbox ||
		byName["review.when"].Kind != FormList || byName["review.on_exhausted"].Kind != FormSelect {
		t.Errorf("kinds: %+v", byName)
	}
}

// TestCompletionFormRoundTrips: a completion with every field set reads back equal
// from its form values.
func TestCompletionFormRoundTrips(t *testing.T) {
	c := filledContract(t).Completion
	back, fe := CompletionFromForm(c.FormValues())
	if len(fe) > 0 || !reflect.DeepEqual(back, c) {
		t.Fatalf("%v\n%+v\n%+v", fe, back, c)
	}
	r := filledContract(t).Review
	if back, fe := ReviewFromForm(r.FormValues()); len(fe) > 0 || !reflect.DeepEqual(back, r) {
		t.Fatalf("review: %v\n%+v\n%+v", fe, back, r)
	}
	if none, fe := ReviewFromForm(map[string]string{"review.every": " "}); none != nil || len(fe) > 0 {
		t.Fatalf("blank review: %v %+v", fe, none)
	}
	if empty, fe := CompletionFromForm(map[string]string{"completion.verify": " \r\n "}); len(fe) > 0 || !reflect.DeepEqual(empty, Completion{}) {
		t.Fatalf("blank form: %v %+v", fe, empty)
	}
}

// TestCompletionFormErrors: a value the codec refuses is a field error in the form's
// words, and the values that parsed are still read.
func TestCompletionFormErrors(t *testing.T) {
	c, fe := CompletionFromForm(map[string]string{
		"completion.min_length": "lots", "completion.timeout": "soon", "completion.max_attempts": "0",
		"completion.checklist.count": "1.5", "completion.path": "out.md", "completion.verify": "a\r\n\r\n b ",
		"completion.cooldown": "90",
	})
	want := FieldErrors{
		"completion.min_length":      "min_length: not a whole number",
		"completion.timeout":         "timeout: not a duration like 30m",
		"completion.max_attempts":    "max_attempts: must be at least 1 (leave it empty for the default, 2)",
		"completion.checklist.count": "count: not a whole number",
	}
	if !reflect.DeepEqual(fe, want) {
		t.Errorf("errors %v", fe)
	}
	r, fe := ReviewFromForm(map[string]string{"review.role": "qa", "review.when": "always, ,final", "review.max_rounds": "x"})
	if r == nil || r.Role != "qa" || strings.Join(r.When, "|") != "always|final" || fe["review.max_rounds"] != "max_rounds: not a whole number" {
		t.Errorf("review %+v %v", r, fe)
	}
	if c.Path != "out.md" || strings.Join(c.Verify, "|") != "a|b" || c.Cooldown.String() != "1m30s" || c.Checklist != nil {
		t.Errorf("parsed %+v", c)
	}
}
