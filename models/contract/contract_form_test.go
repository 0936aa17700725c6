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
		"completion.min_length":      "not a whole number",
		"completion.timeout":         "not a duration like 30m",
		"completion.max_attempts":    "must be at least 1 (leave it empty for the default, 2)",
		"completion.checklist.count": "not a whole number",
	}
	if !reflect.DeepEqual(fe, want) {
		t.Errorf("errors %v", fe)
	}
	r, fe := ReviewFromForm(map[string]string{"review.role": "qa", "review.when": "always, ,final", "review.max_rounds": "x"})
	if r == nil || r.Role != "qa" || strings.Join(r.When, "|") != "always|final" || fe["review.max_rounds"] != "not a whole number" {
		t.Errorf("review %+v %v", r, fe)
	}
	if c.Path != "out.md" || strings.Join(c.Verify, "|") != "a|b" || c.Cooldown.String() != "1m30s" || c.Checklist != nil {
		t.Errorf("parsed %+v", c)
	}
}

// TestCompletionFormTypes: an input applies to a completion type (FormField.AppliesTo)
// exactly when Validate accepts it set on a contract of that type; the inputs the form
// hides for a type are the ones Validate says "only applies to" of.
func TestCompletionFormTypes(t *testing.T) {
	set := map[string]func(*Completion){
		"completion.path":       func(c *Completion) { c.Path = "out.md" },
		"completion.min_length": func(c *Completion) { c.MinLength = 5 },
		"completion.signal":     func(c *Completion) { c.Signal = "done" },
	}
	typed := 0
	for _, f := range CompletionFormFields() {
		if f.Types == nil {
			continue
		}
		typed++
		for _, typ := range []CompletionType{CompletionFile, CompletionSignal, CompletionNone} {
			c := Completion{Type: typ}
			if typ == CompletionSignal {
				c.Path, c.Signal = "s.json", "ok"
			}
			set[f.Name](&c)
			var fe FieldErrors
			c.validate(&fe)
			if got, want := fe[f.Name] == "", f.AppliesTo(string(typ)); got != want {
				t.Errorf("%s on type %s: Validate accepts it %v, AppliesTo %v (%q)", f.Name, typ, got, want, fe[f.Name])
			}
		}
	}
	if typed != len(set) {
		t.Errorf("%d inputs have types, the test sets %d", typed, len(set))
	}
	if f := CompletionFormFields()[0]; !f.AppliesTo("no-such-type") {
		t.Error("an unknown type hides inputs")
	}
}

// TestVerificationFormCoversEveryField: every exported field of Verification, and of
// the Criterion and HeldOutTest of its rows, is either an input named by its YAML path
// or left out with a reason; the words and the reasons name no field that is not.
func TestVerificationFormCoversEveryField(t *testing.T) {
	used := map[string]bool{}
	var walk func(typ reflect.Type, below string, fields []FormField, name func(FormField) string)
	walk = func(typ reflect.Type, below string, fields []FormField, name func(FormField) string) {
		byName := map[string]FormField{}
		for _, f := range fields {
			byName[name(f)] = f
		}
		for f := range typ.Fields() {
			if !f.IsExported() {
				continue
			}
			path := joinPath(below, fieldKey(f))
			used[path] = true
			if why, ok := verificationFormLeftOut[path]; ok {
				if _, shown := byName[path]; shown || why == "" {
					t.Errorf("%s is left out (%q) and shown", path, why)
				}
				continue
			}
			in, ok := byName[path]
			switch {
			case !ok:
				t.Errorf("%s.%s (%s) has no form input and is not left out", typ.Name(), f.Name, path)
			case in.Label == "" || in.Kind == "":
				t.Errorf("%s: no label or kind: %+v", path, in)
			case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
				if in.Kind != FormRows || in.Item == "" {
					t.Errorf("%s: %s, item %q", path, in.Kind, in.Item)
				}
				walk(f.Type.Elem(), path, in.Row, func(r FormField) string { return path + "." + r.Name })
			}
		}
	}
	walk(reflect.TypeFor[Verification](), "", VerificationFormFields(), func(f FormField) string {
		return strings.TrimPrefix(f.Name, "verification.")
	})
	for _, table := range []map[string]string{verificationFormLeftOut, wordsOf(verificationFormText)} {
		for k := range table {
			if !used[k] {
				t.Errorf("%s names no field of the verification", k)
			}
		}
	}
	fields := map[string]FormField{}
	for _, f := range VerificationFormFields() {
		fields[f.Name] = f
	}
	if f := fields["verification.criteria"]; len(f.Row) != 5 || f.Row[0].Name != "activity" || f.Row[3].Kind != FormSelect ||
		f.RowName(2, f.Row[0]) != "verification.criteria[2].activity" {
		t.Errorf("criteria: %+v", f)
	}
	if f := fields["verification.held_out"]; len(f.Row) != 2 || f.Row[1].Kind != FormFile || f.Group != FormGroupJudge {
		t.Errorf("held_out: %+v", f)
	}
	if fields["verification.protect"].Kind != FormLines || fields["verification.tests_may_change"].Kind != FormCheckbox ||
		fields["verification.type"].Kind != FormSelect {
		t.Errorf("kinds: %+v", fields)
	}
}

// wordsOf lists the keys of a words table.
func wordsOf(text map[string]formText) map[string]string {
	out := map[string]string{}
	for k, w := range text {
		out[k] = w.label
	}
	return out
}

// TestVerificationFormRoundTrips: a verification with every field the form shows set
// reads back equal from its form; blank inputs are not given, one-line text is read
// without its spaces, a file with LF line ends.
func TestVerificationFormRoundTrips(t *testing.T) {
	v := filledContract(t).Verification
	v.GeneratedFrom, v.GeneratedAt, v.Workspace, v.Stacks, v.HeldOutCount = "", nil, "", nil, 0
	for i := range v.Criteria {
		v.Criteria[i].Stack, v.Criteria[i].Tools = "", nil
	}
	d := v.FormData()
	if len(d.Rows["verification.criteria"]) != 1 || len(d.Rows["verification.held_out"]) != 1 {
		t.Fatalf("rows %+v", d.Rows)
	}
	back, fe := VerificationFromForm(d)
	if len(fe) > 0 || !reflect.DeepEqual(back, v) {
		t.Fatalf("%v\n%+v\n%+v", fe, back, v)
	}
	back, fe = VerificationFromForm(FormData{
		Values: map[string]string{"verification.type": "verifiable", "verification.protect": "a/**\r\n \r\nb#scripts"},
		Rows: map[string][]FormRow{
			"verification.criteria": {{"activity": " unit-test ", "description": "d", "timing": ""}, {}},
			"verification.held_out": {{"path": " x_test.go", "content": "package x\r\n"}},
		}})
	want := Verification{Type: VerifyVerifiable, Protect: []string{"a/**", "b#scripts"},
		Criteria: []Criterion{{Activity: "unit-test", Description: "d"}, {}},
		HeldOut:  []HeldOutTest{{Path: "x_test.go", Content: "package x\n"}}}
	if len(fe) > 0 || !reflect.DeepEqual(back, want) {
		t.Fatalf("%v\n%+v", fe, back)
	}
	if empty, fe := VerificationFromForm(FormData{}); len(fe) > 0 || !reflect.DeepEqual(empty, Verification{}) {
		t.Fatalf("empty form: %v %+v", fe, empty)
	}
	if !(FormRow{"activity": " ", "command": "\r\n"}).Blank() || (FormRow{"pattern": "x"}).Blank() {
		t.Fatal("FormRow.Blank")
	}
}
