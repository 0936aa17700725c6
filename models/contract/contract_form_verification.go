package contract

import (
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// This file derives the editor form of a contract's verification from its
// declaration, like contract_form.go does the completion's and the review's: its
// criteria and held-out tests, lists of structs, are FormRows inputs whose rows are
// derived from Criterion and HeldOutTest. The fields a form must not set are left out
// by name (verificationFormLeftOut), each with the reason.

// verificationFormText holds the words of the verification form, keyed by the
// field's path below verification ("criteria.activity" for a criterion's). A field
// of Verification, Criterion or HeldOutTest with no entry here and none in
// verificationFormLeftOut is a programming error caught by every test of the package.
var verificationFormText = map[string]formText{
	"type": {label: "Type", options: []FormOption{
		{string(VerifyAuto), "auto — generated from the task before delegation"},
		{string(VerifyVerifiable), "verifiable — the criteria below are run"},
		{string(VerifyAdvisory), "advisory — a person looks at the output"},
		{string(VerifySkip), "skip — minimal criteria only"},
	}},
	"criteria":             {label: "Criteria", item: "criterion", itemLabel: "Criterion"},
	"criteria.activity":    {label: "Activity"},
	"criteria.description": {label: "Description"},
	"criteria.pattern":     {label: "Pattern"},
	"criteria.timing": {label: "Timing", options: []FormOption{
		{"", "(default)"}, {TimingImmediate, TimingImmediate}, {TimingDeferred, TimingDeferred},
	}},
	"criteria.command": {label: "Command"},
	"protect": {label: "Protected paths", lines: 2, group: FormGroupJudge, advanced: true,
		help: "one glob per line, added to the stacks' own (test files, test configuration): restored from the base revision before the checks run; *_test.go, tests/**, package.json#scripts"},
	"tests_may_change": {label: "Tests may change (the task's job is to write or change tests): check the worker's tests as it left them",
		help: "the changes are still reported on each attempt", group: FormGroupJudge, advanced: true},
	"dependencies_may_change": {label: "Dependencies may change (the task may add or upgrade dependencies): the checks install the worker's lockfiles and manifests",
		help:  "otherwise lockfiles, dependency lists, go.mod's require and replace and vendor/ are restored from the base revision; changed dependencies are reported on each attempt",
		group: FormGroupJudge, advanced: true},
	"held_out": {label: "Held-out tests", item: "held-out", itemLabel: "Held-out test", group: FormGroupJudge, advanced: true,
		help: "Held-out tests are files the worker never sees: the judge adds them to its copy of the result before the checks run, so they must pass too. Only leads, admins and editors read them back."},
	"held_out.path":    {label: "Held-out test file", help: "relative to the workspace, e.g. calc_heldout_test.go"},
	"held_out.content": {label: "Its content", file: true, lines: 6},
}

// verificationFormLeftOut are the fields of a verification the form does not show,
// keyed like verificationFormText, each with the reason. A form of a template's step
// reads none of them back: a step saved from the form never carries them.
var verificationFormLeftOut = map[string]string{
	"generated_from": "generation records where a task's criteria came from (auto, user, template) when it makes the task",
	"generated_at":   "the time generation made the criteria: stored, never typed",
	"workspace":      "whether the criteria still wait for the task's workspace: set by generation and by the runner when the workspace is known",
	"stacks":         "the stacks the task's workspace matched: detected by the runner, not typed",
	"held_out_count": "a redacted contract's count of hidden held-out tests: never stored (the editor shows it, read-only)",
	"criteria.stack": "the stack whose rules gave a criterion's command: written by generation from the rules",
	"criteria.tools": "the programs a stack's command runs, for the readiness check: written by generation from the rules",
}

// FormGroupJudge is the FormField.Group of the judge's settings of a verification:
// its protected paths, whether tests and dependencies may change, its held-out tests.
const FormGroupJudge = "judge"

var verificationForm = formPart{root: "verification", text: verificationFormText, leftOut: verificationFormLeftOut}.
	fields(reflect.TypeFor[Verification](), "", nil, "")

// VerificationFormFields returns the inputs of the verification form, one for every
// exported field of Verification but those the form leaves out (computed or stored
// ones: generated_from, workspace, stacks, …), in declaration order; the criteria and
// held-out tests are FormRows inputs whose Row lists Criterion's and HeldOutTest's.
// The slice is shared: do not change it.
func VerificationFormFields() []FormField { return verificationForm }

// FormRow is one row of a FormRows input as typed, keyed by the Name of the row's
// inputs ("activity").
type FormRow map[string]string

// Blank reports whether no input of the row holds more than spaces: a form drops
// such rows (the empty row it shows to add one).
func (r FormRow) Blank() bool {
	for _, v := range r {
		if strings.TrimSpace(v) != "" {
			return false
		}
	}
	return true
}

// FormData is a part of a contract as typed in a form, every value text: Values
// keyed by FormField.Name, Rows, the rows of each FormRows input, keyed by its Name.
type FormData struct {
	Values map[string]string
	Rows   map[string][]FormRow
}

// RowName is the name, in a form, of input r of row j of f (a FormRows input):
// "verification.criteria[2].activity", as Validate names it.
func (f FormField) RowName(j int, r FormField) string { return rowName(f.Name, j, r.Name) }

func rowName(name string, j int, in string) string {
	return name + "[" + strconv.Itoa(j) + "]." + in
}

// FormData returns v as a form shows it (see Completion.FormValues), each criterion
// and held-out test a row; the fields the form leaves out are not in it.
func (v Verification) FormData() FormData {
	return formData(verificationForm, reflect.ValueOf(v))
}

// formData returns the values and rows of the fields of v as a form shows them.
func formData(fields []FormField, v reflect.Value) FormData {
	d := FormData{Values: formValues(fields, v), Rows: map[string][]FormRow{}}
	for _, f := range fields {
		fv, ok := f.value(v)
		if f.Kind != FormRows || !ok {
			continue
		}
		for j := range fv.Len() {
			d.Rows[f.Name] = append(d.Rows[f.Name], FormRow(formValues(f.Row, fv.Index(j))))
		}
	}
	return d
}

// VerificationFromForm reads a verification from a form's values, like
// CompletionFromForm: each given value is read alone as the codec reads its key (a
// refused one is a field error keyed by its name, "verification.criteria[1].activity"),
// then the whole is decoded as a YAML file's verification is, each row an element of
// its list in order. A blank row is read as an empty element, which Validate refuses:
// drop blank rows (FormRow.Blank) before, so that the rows and Validate's indexes agree.
func VerificationFromForm(d FormData) (Verification, FieldErrors) {
	root, fe := readFormData(verificationForm, d, "verification.")
	var v Verification
	if err := root.Decode(&v); err != nil {
		fe.Add("verification", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return v, fe
}

// readFormData is readForm with the rows of d's FormRows inputs: a sequence of
// mappings, one a row, each read by readForm from the row's inputs.
func readFormData(fields []FormField, d FormData, prefix string) (*yaml.Node, FieldErrors) {
	root, fe := readForm(fields, d.Values, prefix)
	for _, f := range fields {
		rows := d.Rows[f.Name]
		if f.Kind != FormRows || len(rows) == 0 {
			continue
		}
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for j, row := range rows {
			n, rfe := readForm(f.Row, row, "")
			for k, m := range rfe {
				fe.Add(rowName(f.Name, j, k), m)
			}
			seq.Content = append(seq.Content, n)
		}
		setFormNode(root, strings.TrimPrefix(f.Name, prefix), seq)
	}
	return root, fe
}
