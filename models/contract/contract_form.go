package contract

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// This file derives the editor form of a contract's completion and review from their
// declaration: the inputs are Completion's fields (and its checklist's) and Review's,
// found by reflection, named by their YAML keys, typed by their Go types; only the
// words shown beside them (completionFormText, reviewFormText) are written here. The
// form is read back through the codec (Completion.UnmarshalYAML, Review's YAML
// decoding), so a form and a YAML or JSON file are read by the same rules. The
// verification's form, with its lists of rows, is contract_form_verification.go's.

// FormKind is how a contract field is typed in a form.
type FormKind string

// The form kinds.
const (
	FormText     FormKind = "text"     // one line of text, read without its surrounding spaces
	FormLongText FormKind = "longtext" // a few lines of prose
	FormFile     FormKind = "file"     // a file's content, read as typed but with LF line ends
	FormNumber   FormKind = "number"   // a whole number; empty is "not given"
	FormDuration FormKind = "duration" // "30m", "90s" or whole seconds; empty is "not given"
	FormLines    FormKind = "lines"    // a list, one item a line (commands)
	FormList     FormKind = "list"     // a short list on one line, comma-separated
	FormCheckbox FormKind = "checkbox" // a bool
	FormSelect   FormKind = "select"   // one of Options
	FormRows     FormKind = "rows"     // a list of structs, one row of Row's inputs each
)

// FormOption is one choice of a select field.
type FormOption struct{ Value, Label string }

// FormField describes one input of a contract's form. Name is the field's path as
// Validate names it ("completion.min_length", "completion.checklist.count"), Key its
// last part; an input of a row is named by its path below the row ("activity"), and
// RowName names it in a form.
type FormField struct {
	Name, Key   string
	Kind        FormKind
	Label, Help string
	Options     []FormOption
	// Lines is how many lines its text area shows; 0: the form's default.
	Lines int
	// Group, when set, names the part of the form the input is shown in apart from
	// its part's other inputs ("judge": the judge's settings of a verification).
	Group string
	// Row holds the inputs of one row of a FormRows field, in declaration order, and
	// Item says what a row is called in ids and button values ("criterion").
	Row  []FormField
	Item string
	// Types are the completion types a completion input applies to (the values of
	// completion.type's options, "" for inferred); nil: every type, and every input
	// of the verification and the review. See AppliesTo.
	Types []string
	// Advanced marks an input a form shows behind an "Advanced" disclosure: one most
	// steps leave at its default.
	Advanced bool
	// ItemLabel is what one row of a FormRows input is called in words ("Criterion").
	ItemLabel string

	index []int        // the field's path through its part's fields (pointers followed)
	wire  reflect.Type // the type the codec reads the field's key into
}

// formText is what a form shows of a field: its label, help and, for a select, its
// choices; long marks prose that wants a text area, list a list typed on one line,
// file a file's content; lines, group, item and advanced are FormField's, types its
// Types.
type formText struct {
	label, help      string
	long, list, file bool
	options          []FormOption
	lines            int
	group, item      string
	itemLabel        string
	types            []CompletionType
	advanced         bool
}

// The completion types a completion input applies to, as Completion.validate reads
// them: a path for a file or a signal file (and an inferred type, which a path makes
// file), a minimum length for a file, a signal value for a signal. An input not named
// here applies to every type.
var (
	forFileAndSignal = []CompletionType{"", CompletionFile, CompletionSignal}
	forFile          = []CompletionType{"", CompletionFile}
	forSignal        = []CompletionType{CompletionSignal}
)

// completionFormText holds the words of the completion form, keyed by the field's
// path below completion. A field of Completion without an entry is a programming
// error caught by every test of the package (formPart.fields panics when the package starts).
var completionFormText = map[string]formText{
	"type": {label: "Type", options: []FormOption{
		{"", "(infer: file when a path is set, else none)"},
		{string(CompletionFile), "file — a file at path"},
		{string(CompletionSignal), "signal — a JSON file whose \"signal\" equals the value"},
		{string(CompletionNone), "none — a clean exit is enough"},
	}},
	"path":            {label: "Output path", help: "relative to the task workspace, e.g. {task_id}/output.md", types: forFileAndSignal},
	"min_length":      {label: "Minimum length (bytes)", types: forFile},
	"signal":          {label: "Signal value", types: forSignal},
	"done_token":      {label: "Done token", help: "must appear in the worker's output", advanced: true},
	"verify":          {label: "Verify commands", help: "one command per line; each must exit 0 in the workspace"},
	"verify_timeout":  {label: "Verify timeout", help: "per command, e.g. 5m", advanced: true},
	"evaluate":        {label: "Evaluate (semantic criteria)", long: true},
	"max_attempts":    {label: "Max attempts", help: fmt.Sprintf("default %d: the worker and one revision", DefaultMaxAttempts)},
	"timeout":         {label: "Timeout", help: "per attempt, e.g. 30m", advanced: true},
	"cooldown":        {label: "Cooldown", help: "between attempts, e.g. 10s", advanced: true},
	"clean":           {label: "Workspace must be clean (no uncommitted changes)", advanced: true},
	"checklist.path":  {label: "Checklist path", advanced: true},
	"checklist.count": {label: "Checked boxes required", advanced: true},
}

// reviewFormText holds the words of the review form, keyed by the field's key.
var reviewFormText = map[string]formText{
	"role":       {label: "Reviewer role", help: "empty: no review"},
	"when":       {label: "When", help: "comma-separated: always, phase, every, final", list: true},
	"every":      {label: "Every n-th task", advanced: true},
	"max_rounds": {label: "Max rounds", help: fmt.Sprintf("at most %d", MaxReviewRounds), advanced: true},
	"on_exhausted": {label: "When the rounds run out", help: "what happens when the last round fails", advanced: true, options: []FormOption{
		{"", "(default: block)"},
		{OnExhaustedBlock, "block — the task is blocked"},
		{OnExhaustedProceed, "proceed_with_warnings — the task goes on, the review's findings as warnings"},
	}},
}

var (
	completionForm = formPart{root: "completion", text: completionFormText, wire: wireFieldType}.fields(reflect.TypeFor[Completion](), "", nil, "")
	reviewForm     = formPart{root: "review", text: reviewFormText}.fields(reflect.TypeFor[Review](), "", nil, "")
)

// CompletionFormFields returns the inputs of the completion form, one for every
// exported field of Completion and of the structs it points to, in declaration
// order. The slice is shared: do not change it.
func CompletionFormFields() []FormField { return completionForm }

// ReviewFormFields returns the inputs of the review form, one for every exported
// field of Review, in declaration order. The slice is shared: do not change it.
func ReviewFormFields() []FormField { return reviewForm }

// formPart is how one part of a contract (its completion, verification or review)
// is shown in a form.
type formPart struct {
	root string              // the part's key in a contract: "completion"
	text map[string]formText // the words of its fields, keyed by their path below root
	// leftOut are the fields the form does not show, keyed like text, each with why.
	leftOut map[string]string
	// wire, when set, maps the type of a field of the part itself to the type the
	// codec reads its key into (Completion's wire type); nil: the field's own type.
	wire func(reflect.Type) reflect.Type
}

// fields lists the inputs of struct t, found below the part's root at path below
// ("" for the part itself): a pointer to a struct is walked into, a slice of structs
// is a FormRows input whose rows are t's element's inputs. Inputs are named by their
// path below root, or below row for the inputs of a row. A field with neither words
// nor a place in leftOut panics: every test of the package catches it.
func (p formPart) fields(t reflect.Type, below string, index []int, row string) []FormField {
	var out []FormField
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		key := fieldKey(f)
		path, idx := joinPath(below, key), append(append([]int(nil), index...), f.Index[0])
		if _, ok := p.leftOut[path]; ok {
			continue
		}
		name := p.root + "." + path
		if row != "" {
			name = strings.TrimPrefix(path, row+".")
		}
		if f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct {
			out = append(out, p.fields(f.Type.Elem(), path, idx, row)...)
			continue
		}
		w, ok := p.text[path]
		if !ok {
			panic("contract: no form words for " + p.root + "." + path)
		}
		ff := FormField{Name: name, Key: key, Kind: formKind(f.Type, w), Label: w.label, Help: w.help,
			Options: w.options, Lines: w.lines, Group: w.group, Item: w.item, ItemLabel: w.itemLabel, Advanced: w.advanced, index: idx, wire: f.Type}
		for _, t := range w.types {
			ff.Types = append(ff.Types, string(t))
		}
		if p.wire != nil && below == "" {
			ff.wire = p.wire(f.Type)
		}
		if ff.Kind == FormRows {
			ff.Row = p.fields(f.Type.Elem(), path, nil, path)
		}
		out = append(out, ff)
	}
	return out
}

// AppliesTo reports whether input f applies to a step of completion type typ (the
// value of completion.type as typed, "" for inferred): every input whose Types is
// nil, and every input when typ is no known type (a form then shows them all).
func (f FormField) AppliesTo(typ string) bool {
	if f.Types == nil || !knownCompletionType(typ) {
		return true
	}
	return slices.Contains(f.Types, typ)
}

// FormLabel returns the words a form shows for the input named name, a
// FormField.Name of the completion, verification or review form or a row's input as
// RowName names it ("verification.criteria[2].activity" is "Criterion 3, Activity";
// "verification.criteria[2]" is "Criterion 3"), "" when no input has that name.
func FormLabel(name string) string {
	for _, part := range [][]FormField{completionForm, verificationForm, reviewForm} {
		for _, f := range part {
			if f.Name == name {
				return f.Label
			}
			rest, ok := strings.CutPrefix(name, f.Name+"[")
			if !ok || f.Kind != FormRows {
				continue
			}
			n, in, _ := strings.Cut(rest, "]")
			j, err := strconv.Atoi(n)
			if err != nil {
				return ""
			}
			row := f.ItemLabel + " " + strconv.Itoa(j+1)
			if in == "" {
				return row
			}
			for _, r := range f.Row {
				if "."+r.Name == in {
					return row + ", " + r.Label
				}
			}
			return ""
		}
	}
	return ""
}

// knownCompletionType reports whether typ is one of completion.type's choices.
func knownCompletionType(typ string) bool {
	for _, o := range completionFormText["type"].options {
		if o.Value == typ {
			return true
		}
	}
	return false
}

// fieldKey is a field's YAML key; for a field the YAML codec leaves out (`yaml:"-"`),
// its JSON key, the only name it has.
func fieldKey(f reflect.StructField) string {
	key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if key == "-" {
		key, _, _ = strings.Cut(f.Tag.Get("json"), ",")
	}
	return key
}

// joinPath is key below path ("" for the top).
func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// formKind is the input a field of type t is typed in.
func formKind(t reflect.Type, w formText) FormKind {
	switch {
	case w.options != nil:
		return FormSelect
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		return FormRows
	case t == reflect.TypeFor[Duration]():
		return FormDuration
	case t.Kind() == reflect.Int:
		return FormNumber
	case t.Kind() == reflect.Bool:
		return FormCheckbox
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String && w.list:
		return FormList
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		return FormLines
	case t.Kind() == reflect.String && w.long:
		return FormLongText
	case t.Kind() == reflect.String && w.file:
		return FormFile
	case t.Kind() == reflect.String:
		return FormText
	}
	panic("contract: no form input for a " + t.String())
}

// value is the field's value in c, the zero value when a pointer on its path is nil.
func (f FormField) value(c reflect.Value) (reflect.Value, bool) {
	for _, i := range f.index {
		if c.Kind() == reflect.Pointer {
			if c.IsNil() {
				return reflect.Value{}, false
			}
			c = c.Elem()
		}
		c = c.Field(i)
	}
	return c, true
}

// FormValues returns c as a form shows it, keyed by FormField.Name: zero numbers and
// durations empty (the default), commands one a line, a set checkbox "on".
func (c Completion) FormValues() map[string]string {
	return formValues(completionForm, reflect.ValueOf(c))
}

// FormValues returns r as a form shows it, keyed by FormField.Name (the triggers
// comma-separated); nil shows as an empty form.
func (r *Review) FormValues() map[string]string {
	if r == nil {
		return map[string]string{}
	}
	return formValues(reviewForm, reflect.ValueOf(*r))
}

// formValues returns the values of the fields of v as a form shows them.
func formValues(fields []FormField, v reflect.Value) map[string]string {
	out := map[string]string{}
	for _, f := range fields {
		fv, ok := f.value(v)
		if !ok || fv.IsZero() || f.Kind == FormRows {
			continue // rows are FormData's
		}
		switch f.Kind {
		case FormNumber:
			out[f.Name] = strconv.FormatInt(fv.Int(), 10)
		case FormDuration:
			out[f.Name] = fv.Interface().(Duration).String()
		case FormLines:
			out[f.Name] = strings.Join(fv.Interface().([]string), "\n")
		case FormList:
			out[f.Name] = strings.Join(fv.Interface().([]string), ", ")
		case FormCheckbox:
			out[f.Name] = "on"
		default:
			out[f.Name] = fv.String()
		}
	}
	return out
}

// CompletionFromForm reads a completion contract from a form's values, keyed by
// FormField.Name; a blank value is not given (the default). Each given value is first
// read alone, as the codec reads its key: one it refuses is a field error keyed by the
// field's name ("not a whole number", keyed completion.min_length) and is left out, so that the
// completion holds what did parse and Validate can still report the rest. The values
// are then read together by Completion.UnmarshalYAML, as a YAML file's would be.
func CompletionFromForm(values map[string]string) (Completion, FieldErrors) {
	root, fe := readForm(completionForm, values, "completion.")
	var c Completion
	if err := root.Decode(&c); err != nil {
		fe.Add("completion", err.Error())
		return c, fe
	}
	if c.zeroMaxAttempts || c.MaxAttempts < 0 {
		// A form has no "left out" but an empty input, which is the default: a typed
		// budget below 1 is refused here, in the form's words.
		fe.Add("completion.max_attempts", fmt.Sprintf("must be at least 1 (leave it empty for the default, %d)", DefaultMaxAttempts))
	}
	return c, fe
}

// ReviewFromForm reads a review from a form's values, keyed by FormField.Name, like
// CompletionFromForm; nil when no value that parsed was given (no review).
func ReviewFromForm(values map[string]string) (*Review, FieldErrors) {
	root, fe := readForm(reviewForm, values, "review.")
	if len(root.Content) == 0 {
		return nil, fe
	}
	var r Review
	if err := root.Decode(&r); err != nil {
		fe.Add("review", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return &r, fe
}

// readForm builds the YAML mapping of the given values of fields (named below
// prefix), reading each alone into the type the codec reads its key into: a value
// refused there is a field error and is left out.
func readForm(fields []FormField, values map[string]string, prefix string) (*yaml.Node, FieldErrors) {
	fe := FieldErrors{}
	root := &yaml.Node{Kind: yaml.MappingNode}
	for _, f := range fields {
		n := formNode(f.Kind, values[f.Name])
		if n == nil || f.Kind == FormRows {
			continue // rows are readFormData's
		}
		if err := n.Decode(reflect.New(f.wire).Interface()); err != nil {
			// The message says what is wrong, not which field: a form shows it beside
			// the field, under its label.
			fe.Add(f.Name, formMessage(f.Kind, err))
			continue
		}
		setFormNode(root, strings.TrimPrefix(f.Name, prefix), n)
	}
	return root, fe
}

// setFormNode sets the member at the dotted path below root (a mapping) to n,
// making the mappings on the way.
func setFormNode(root *yaml.Node, path string, n *yaml.Node) {
	keys := strings.Split(path, ".")
	parent := root
	for _, k := range keys[:len(keys)-1] {
		parent = mappingOf(parent, k)
	}
	parent.Content = append(parent.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: keys[len(keys)-1]}, n)
}

// formNode is the YAML node of a typed value, nil when it is blank. Text is a
// string whatever it looks like (one line without its surrounding spaces, a file
// with LF line ends); a number must be a YAML integer; a duration is
// resolved as YAML resolves it, as Duration.UnmarshalYAML expects.
func formNode(kind FormKind, v string) *yaml.Node {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	switch kind {
	case FormText:
		return str(strings.TrimSpace(v))
	case FormFile:
		// Browsers send a textarea's lines ending in CRLF: the file is read with LF.
		return str(strings.ReplaceAll(v, "\r\n", "\n"))
	case FormNumber:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strings.TrimSpace(v)}
	case FormDuration:
		return &yaml.Node{Kind: yaml.ScalarNode, Value: strings.TrimSpace(v)}
	case FormCheckbox:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"}
	case FormLines, FormList:
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		// Browsers send a textarea's lines ending in CRLF.
		sep, v := ",", strings.ReplaceAll(v, "\r\n", "\n")
		if kind == FormLines {
			sep = "\n"
		}
		for _, item := range strings.Split(v, sep) {
			if item = strings.TrimSpace(item); item != "" {
				seq.Content = append(seq.Content, str(item))
			}
		}
		return seq
	}
	return str(v)
}

// formMessage says why a typed value was refused.
func formMessage(kind FormKind, err error) string {
	switch kind {
	case FormNumber:
		return "not a whole number"
	case FormDuration:
		return "not a duration like 30m"
	}
	return strings.TrimPrefix(err.Error(), "yaml: ")
}

// mappingOf returns the mapping under key in m, adding it when m has none.
func mappingOf(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	child := &yaml.Node{Kind: yaml.MappingNode}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, child)
	return child
}
