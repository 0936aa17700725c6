// Package template is the workflow template editor: one version of a template as a
// form of every step and its contract, with add, remove and reorder buttons that work
// without JavaScript, field errors beside the field, and the list of versions.
//
// Every input is named by the path Template.Validate uses for its errors
// (steps[1].completion.path), so an error is shown beside the input of the same name.
package template

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
)

// View is the editor page's model.
type View struct {
	Meta layout.PageMeta
	CSRF string
	// Action is where the form posts: /templates/new or /templates/<name>.
	Action string
	// New is true on /templates/new: the name can be typed.
	New bool
	// ReadOnly shows an older version (or the form to someone who may not edit):
	// every input disabled, no buttons.
	ReadOnly bool
	// Version is the version shown; BaseVersion the version the edit started from
	// (posted back so that a concurrent save is noticed). Latest is the newest.
	Version     int
	BaseVersion int
	Latest      int
	Form        Form
	// Errors maps input names to their message; FormError is shown above the form.
	Errors    map[string]string
	FormError string
	Versions  []VersionRow
	// History lists the template's changes (versions saved), newest first, each with
	// its diff from the version before.
	History []components.HistoryItem
	// CanEdit says whether the signed-in agent may save (lead, admin or editor).
	CanEdit bool
	// Open is the index of the step shown expanded (-1: every step collapsed to its
	// one-line summary). Steps with a field error are expanded too.
	Open int
	// Unsaved says the form holds changes not yet saved (it was re-shown after an
	// add, move, preview or a refused save): leaving the page warns.
	Unsaved bool
	// Preview is the preview of one step shown beside the form; nil for none.
	Preview *Preview
}

// Preview is what one step becomes when a run starts: its contract in plain words and
// the brief the runner gives the worker of its first attempt.
type Preview struct {
	Step int // index of the step
	// Words describes the contract in plain words, a sentence each.
	Words []string
	// Brief is the worker's brief as the runner renders it; Problems, when the step
	// cannot become a task yet, say why instead.
	Brief    string
	Problems []string
	// Note says what the preview assumes (the task number, the workspace).
	Note string
}

// VersionRow is one saved version in the versions list.
type VersionRow struct {
	Version   int
	Steps     int
	Creator   string
	CreatedAt time.Time
}

// Form is a template as typed: every value is text, so that a value that does not
// parse ("abc" for a number) is shown back exactly as typed beside its error.
type Form struct {
	Name        string
	Description string
	Steps       []StepForm
}

// StepForm is one step of the form.
type StepForm struct {
	Name    string
	Role    string
	Brief   string
	Approve string
	Verify  string

	// Completion holds the completion contract's inputs as typed, keyed by
	// contract.FormField.Name ("completion.min_length"): the form's fields are
	// contract.CompletionFormFields, derived from the contract's declaration.
	Completion map[string]string

	// Verification holds the verification's inputs as typed: Values keyed by
	// contract.FormField.Name ("verification.type"), Rows the criteria and held-out
	// tests keyed by their input's Name ("verification.criteria"), each row keyed by the
	// Name of its inputs ("activity"). The fields are contract.VerificationFormFields.
	Verification contract.FormData
	// HeldOutHidden is how many held-out tests the step has that the reader may not
	// see (they are not in Verification); the form is then read-only.
	HeldOutHidden int

	// Review holds the review's inputs as typed, keyed by contract.FormField.Name
	// ("review.role"): the fields are contract.ReviewFormFields.
	Review map[string]string

	// Parallel names the group of consecutive steps that run at the same time.
	Parallel string
}

// StepField is the input name of a field of step i: StepField(1, "completion.path")
// is "steps[1].completion.path", the key Template.Validate reports it under.
func StepField(i int, field string) string {
	return "steps[" + strconv.Itoa(i) + "]." + field
}

// RowField is the input name of input r of row j of the rows input f of step i:
// "steps[0].verification.criteria[2].activity", as Template.Validate names it.
func RowField(i int, f contract.FormField, j int, r contract.FormField) string {
	return StepField(i, f.RowName(j, r))
}

// Op values of the editor's submit buttons.
const (
	OpSave = "save"
	OpAdd  = "add"
)

// OpPreview previews step i (the form is re-shown with the preview; with the header
// PreviewHeader only the preview fragment is answered).
func OpPreview(i int) string { return "preview:" + strconv.Itoa(i) }

// PreviewHeader is the request header editor.js sets on a preview request, asking for
// the preview fragment instead of the whole page.
const PreviewHeader = "X-Template-Preview"

// OpRemove, OpUp, OpDown and OpRemoveRow build the op values of the per-step
// buttons: "remove:2", "up:1", "down:0", "remove-criterion:1:0".
func OpRemove(i int) string { return "remove:" + strconv.Itoa(i) }

// OpUp moves step i one place up.
func OpUp(i int) string { return "up:" + strconv.Itoa(i) }

// OpDown moves step i one place down.
func OpDown(i int) string { return "down:" + strconv.Itoa(i) }

// OpRemoveRow removes row j of the rows input f of step i: "remove-criterion:1:0",
// "remove-held-out:0:2" (the op is "remove-" and the row's contract.FormField.Item).
func OpRemoveRow(i int, f contract.FormField, j int) string {
	return "remove-" + f.Item + ":" + strconv.Itoa(i) + ":" + strconv.Itoa(j)
}

func (v View) err(name string) string { return v.Errors[name] }

func (v View) title() string {
	if v.New {
		return "New workflow template"
	}
	return v.Form.Name
}

func (v View) subtitle() string {
	switch {
	case v.New:
		return "Each step becomes a task; step N+1 is released only when step N is verified."
	case v.ReadOnly && v.Version != v.Latest:
		return "Version " + strconv.Itoa(v.Version) + " (read-only; the latest is version " + strconv.Itoa(v.Latest) + ")"
	case v.ReadOnly:
		return "Version " + strconv.Itoa(v.Version) + " (read-only)"
	}
	return "Editing version " + strconv.Itoa(v.Version) + ": saving makes version " + strconv.Itoa(v.Latest+1)
}

func (v View) yamlHref() string {
	return "/templates/" + v.Form.Name + "/yaml?version=" + strconv.Itoa(v.Version)
}

func versionHref(name string, version int) string {
	return "/templates/" + name + "?version=" + strconv.Itoa(version)
}

func itoa(n int) string { return strconv.Itoa(n) }

// formRows returns the rows of a rows input plus one blank row to add another (none
// when read-only).
func formRows(rows []contract.FormRow, readOnly bool) []contract.FormRow {
	if readOnly {
		return rows
	}
	return append(append([]contract.FormRow(nil), rows...), contract.FormRow{})
}

// rowClass lays out a row of f: on one line when its inputs are one-line inputs.
func rowClass(f contract.FormField) string {
	for _, r := range f.Row {
		if wideInput(r) {
			return "section"
		}
	}
	return "inline-form section"
}

// rowsHint is the help below a rows input: its own, and how rows are added.
func rowsHint(f contract.FormField) string {
	const add = "Fill the empty row to add one; rows left empty are dropped."
	if f.Help == "" {
		return add
	}
	return f.Help + " " + add
}

// verificationType is the step's verification type on its summary line.
func verificationType(s StepForm) string {
	return orNone(s.Verification.Values["verification.type"], string(contract.VerifyAuto))
}

// criteriaLen is the number of the step's criteria on its summary line.
func criteriaLen(s StepForm) int { return len(s.Verification.Rows["verification.criteria"]) }

// props returns the field properties of input name with its error, disabled when the
// view is read-only.
func (v View) props(name, label, value string) components.FieldProps {
	return components.FieldProps{Name: name, Label: label, Value: value, Error: v.Errors[name], Disabled: v.ReadOnly}
}

// contractProps returns the field properties of contract input f, named name in the
// form: its words and, for a text area, its lines (rows when f sets none).
func (v View) contractProps(name string, f contract.FormField, value string, rows int) components.FieldProps {
	if f.Lines > 0 {
		rows = f.Lines
	}
	return withRows(withHelp(v.props(name, f.Label, value), f.Help), rows)
}

// contractOptions are the choices of a select contract input.
func contractOptions(f contract.FormField) []components.Option {
	out := make([]components.Option, len(f.Options))
	for k, o := range f.Options {
		out[k] = components.Option{Value: o.Value, Label: o.Label}
	}
	return out
}

// wideInput reports whether a contract input takes the fieldset's width (text
// areas and checkboxes) rather than a cell of its grid.
func wideInput(f contract.FormField) bool {
	return f.Kind == contract.FormLines || f.Kind == contract.FormLongText || f.Kind == contract.FormFile ||
		f.Kind == contract.FormCheckbox
}

// ErrorItem is one line of the error summary above the form: Where names the field
// in words ("Step 4 “Write the guide” — Max attempts"), ID is its input's element id
// (the summary links to it).
type ErrorItem struct {
	Field, ID, Where, Message string
}

// StepLabels are the words of a step's own inputs (those outside its contract), keyed
// by their name below the step: the form's labels and the error summary's.
var StepLabels = map[string]string{
	"name": "Step name", "role": "Role", "brief": "Brief",
	"approve": "Approved by", "verify": "Verified by", "parallel": "Parallel group",
}

// formLabels are the words of the template's own inputs and of a contract part as a
// whole (an error of its whole YAML mapping).
var formLabels = map[string]string{
	"name": "Name", "description": "Description", "steps": "Steps",
	"completion": "Completion", "verification": "Verification", "review": "Review", "budget": "Budget",
}

// InputLabel names an input of a step in words, by its name below the step
// ("completion.max_attempts" is "Max attempts"): the step's own labels, then the
// contract's (contract.FormLabel); an input with neither keeps its name.
func InputLabel(field string) string {
	if l := StepLabels[field]; l != "" {
		return l
	}
	if l := contract.FormLabel(field); l != "" {
		return l
	}
	if l := formLabels[field]; l != "" {
		return l
	}
	return field
}

var stepInputRE = regexp.MustCompile(`^steps\[(\d+)\]\.(.+)$`)

// fieldWords names input name of the form in words: "Step 4 “Write the guide” — Max
// attempts" (steps numbered from 1, as their summary lines are), "Description".
func (v View) fieldWords(name string) string {
	m := stepInputRE.FindStringSubmatch(name)
	if m == nil {
		if l := formLabels[name]; l != "" {
			return l
		}
		return name
	}
	i, _ := strconv.Atoi(m[1])
	step := "Step " + strconv.Itoa(i+1)
	if i < len(v.Form.Steps) && strings.TrimSpace(v.Form.Steps[i].Name) != "" {
		step += " “" + strings.TrimSpace(v.Form.Steps[i].Name) + "”"
	}
	return step + " — " + InputLabel(m[2])
}

// errorList returns the errors in the form's order: the template's own, then each
// step's, steps in order (by input name within a step).
func (v View) errorList() []ErrorItem {
	keys := make([]string, 0, len(v.Errors))
	for k := range v.Errors {
		keys = append(keys, k)
	}
	stepOf := func(k string) int {
		if m := stepInputRE.FindStringSubmatch(k); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
		return -1
	}
	sort.Slice(keys, func(a, b int) bool {
		if sa, sb := stepOf(keys[a]), stepOf(keys[b]); sa != sb {
			return sa < sb
		}
		return keys[a] < keys[b]
	})
	out := make([]ErrorItem, 0, len(keys))
	for _, k := range keys {
		out = append(out, ErrorItem{Field: k, ID: components.FieldID(k), Where: v.fieldWords(k), Message: v.Errors[k]})
	}
	return out
}

func withRows(p components.FieldProps, rows int) components.FieldProps {
	p.Rows = rows
	return p
}

func withHelp(p components.FieldProps, help string) components.FieldProps {
	p.Help = help
	return p
}

func withMono(p components.FieldProps) components.FieldProps {
	p.Mono = true
	return p
}

// isOpen reports whether step i is shown expanded: the open step, and every step with
// a field error (an error is never hidden in a collapsed step).
func (v View) isOpen(i int) bool { return v.Open == i || v.stepErrors(i) > 0 }

// stepErrors counts the field errors of step i.
func (v View) stepErrors(i int) int {
	prefix := StepField(i, "")
	n := 0
	for k := range v.Errors {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			n++
		}
	}
	return n
}

// stepName is a step's name on its summary line.
func stepName(s StepForm) string {
	if s.Name != "" {
		return s.Name
	}
	return "(no name)"
}

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

func criteriaCount(n int) string {
	if n == 1 {
		return "1 criterion"
	}
	return strconv.Itoa(n) + " criteria"
}

func errorCount(n int) string {
	if n == 1 {
		return "1 error"
	}
	return strconv.Itoa(n) + " errors"
}

// completionTypeInput is the input of a step's completion type.
const completionTypeInput = "completion.type"

// typesAttr is the data-types attribute of a contract input's wrapper: the completion
// types it applies to, space-separated, "infer" standing for the inferred type (""),
// as editor.js reads it; "" for an input of every type.
func typesAttr(f contract.FormField) string {
	out := make([]string, len(f.Types))
	for k, t := range f.Types {
		out[k] = orNone(t, "infer")
	}
	return strings.Join(out, " ")
}

// hiddenInput reports whether contract input f of step i is hidden: it does not apply
// to the step's completion type and holds neither a value nor an error (a value the
// type does not use is shown, beside Validate's "only applies to").
func (v View) hiddenInput(i int, s StepForm, f contract.FormField) bool {
	return !f.AppliesTo(s.Completion[completionTypeInput]) && s.Completion[f.Name] == "" &&
		v.Errors[StepField(i, f.Name)] == ""
}

// advancedFields are the inputs of part shown behind the step's Advanced disclosure
// (advanced true) or before it (advanced false).
func advancedFields(part []contract.FormField, advanced bool) []contract.FormField {
	var out []contract.FormField
	for _, f := range part {
		if f.Advanced == advanced {
			out = append(out, f)
		}
	}
	return out
}

// allAdvanced lists the advanced inputs of every part of a step's contract.
func allAdvanced() []contract.FormField {
	out := advancedFields(contract.CompletionFormFields(), true)
	out = append(out, advancedFields(contract.VerificationFormFields(), true)...)
	return append(out, advancedFields(contract.ReviewFormFields(), true)...)
}

// advancedOpen reports whether step i's Advanced disclosure is shown open: when one
// of its inputs has an error (an error is never hidden).
func (v View) advancedOpen(i int) bool {
	for _, f := range allAdvanced() {
		name := StepField(i, f.Name)
		for k := range v.Errors {
			if k == name || strings.HasPrefix(k, name+"[") || strings.HasPrefix(k, name+".") {
				return true
			}
		}
	}
	return false
}

// advancedSummary is the Advanced disclosure's summary: how many of its inputs are
// set, so that a closed one does not hide that it holds something.
func advancedSummary(s StepForm) string {
	n := 0
	for _, f := range allAdvanced() {
		switch {
		case f.Kind == contract.FormRows:
			n += len(s.Verification.Rows[f.Name])
		case s.Completion[f.Name] != "" || s.Verification.Values[f.Name] != "" || s.Review[f.Name] != "":
			n++
		}
	}
	if n == 0 {
		return "Advanced"
	}
	return "Advanced (" + strconv.Itoa(n) + " set)"
}
