// Package rules is the project rules page: the rules contract generation uses
// (activity → command, file pattern → activities, always activities, advisory and skip
// words, and the stacks: detection, commands, protected paths, test results) as a
// form, a "try it" form that shows the verification contract the saved rules generate
// for a task, and a "check a workspace" form that shows which stacks a directory on
// the server matches, without saving anything.
package rules

import (
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"

	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
)

// View is the rules page's model.
type View struct {
	Meta layout.PageMeta
	CSRF string
	// CanEdit says whether the signed-in agent may save (lead, admin or editor).
	CanEdit bool
	Form    Form
	// Errors maps input names (activities[2].command, always, skip_words) to messages.
	Errors map[string]string
	// Defaults is true while no rules were saved: the built-in defaults are shown.
	Defaults  bool
	UpdatedAt time.Time
	Try       TryForm
	Result    *TryResult
	// History lists the changes of the rules, newest first.
	History []components.HistoryItem
	// Stacks shows the stacks of the rules as they are saved (or the defaults).
	Stacks []StackView
	// Check is the "check a workspace" form; CheckError its error, shown beside the
	// path; CheckResult what the directory matched.
	Check       CheckForm
	CheckError  string
	CheckResult *CheckResult
}

// StackView is one stack as the page shows it.
type StackView struct {
	Name     string
	Detect   string // "file go.mod", or several joined by "or"
	Commands []StackCommandView
	Protect  []string
	// Pins are the dependency pins, protected unless a contract lets dependencies
	// change; Install how the judge then installs them ("npm ci ... (when file
	// package-lock.json)").
	Pins    []string
	Install []string
	Results []string // "go-test-json: go test -json ./..."
}

// StackCommandView is one command of a stack.
type StackCommandView struct {
	Activity    string
	Command     string
	Description string
	When        string // "script test and file pnpm-lock.yaml"
	Tools       string // comma-separated
}

// CheckForm is the directory typed into the "check a workspace" form.
type CheckForm struct {
	Path string
}

// CheckResult is what a directory matched.
type CheckResult struct {
	Dir        string
	Files      int
	Scripts    []string
	Targets    []string
	Configured []string // "pytest in pyproject.toml"
	Tools      []string // on the server's PATH
	Problems   []string
	Matches    []CheckMatch
}

// CheckMatch is one stack a directory matched.
type CheckMatch struct {
	Name     string
	Reason   string
	Commands []CheckCommand
	Left     []string // activities with no applicable command, with why
	Protect  []string
	Results  string
}

// CheckCommand is a command that applies to the directory, with why.
type CheckCommand struct {
	Activity string
	Command  string
	Reason   string
	Missing  string // tools not on PATH, comma-separated
}

// Form is the rules as typed.
type Form struct {
	Activities    []ActivityRow
	FilePatterns  []PatternRow
	Always        string // comma-separated activities
	AdvisoryWords string // one word or phrase per line
	SkipWords     string // one word or phrase per line
	Stacks        string // the stacks as YAML
	Prices        string // the price table as YAML
	// Hats are the hat table's rows; PromptForAdvisory the advisory prompt's switch.
	Hats              []HatRow
	PromptForAdvisory bool
}

// ActivityRow maps an activity to its command.
type ActivityRow struct {
	Name    string
	Command string
}

// PatternRow maps a file glob to activities.
type PatternRow struct {
	Pattern    string
	Activities string // comma-separated
	Timing     string
}

// TryForm is the task described in the "try it" form.
type TryForm struct {
	Title       string
	Description string
	Files       string // expected files, one per line or comma-separated
}

// TryResult is the verification contract generated for the TryForm.
type TryResult struct {
	Type string
	// Pending says the workspace's stacks complete the criteria before the first
	// attempt.
	Pending  bool
	Files    []string // the expected files generation saw (given and found in the text)
	Criteria []TryCriterion
}

// TryCriterion is one generated criterion.
type TryCriterion struct {
	Activity    string
	Description string
	Pattern     string
	Timing      string
	Command     string
}

// ActivityField and PatternField name the inputs of row i.
func ActivityField(i int, field string) string {
	return "activities[" + strconv.Itoa(i) + "]." + field
}

// HatField names an input of hat row i (name, conflicts_with).
func HatField(i int, field string) string {
	return "hats[" + strconv.Itoa(i) + "]." + field
}

// PatternField names an input of file pattern row i.
func PatternField(i int, field string) string {
	return "file_patterns[" + strconv.Itoa(i) + "]." + field
}

// Timings are the choices of a file pattern's timing select.
var Timings = []components.Option{
	{Value: "", Label: "(default)"},
	{Value: "immediate", Label: "immediate"},
	{Value: "deferred", Label: "deferred"},
}

// blankRows is how many empty rows are offered for adding.
const blankRows = 2

func (v View) activityRows() []ActivityRow {
	if !v.CanEdit {
		return v.Form.Activities
	}
	return append(append([]ActivityRow(nil), v.Form.Activities...), make([]ActivityRow, blankRows)...)
}

func (v View) patternRows() []PatternRow {
	if !v.CanEdit {
		return v.Form.FilePatterns
	}
	return append(append([]PatternRow(nil), v.Form.FilePatterns...), make([]PatternRow, blankRows)...)
}

func (v View) hatRows() []HatRow {
	if !v.CanEdit {
		return v.Form.Hats
	}
	return append(append([]HatRow(nil), v.Form.Hats...), make([]HatRow, blankRows)...)
}

func (v View) props(name, label, value string) components.FieldProps {
	return components.FieldProps{Name: name, Label: label, Value: value, Error: v.Errors[name], Disabled: !v.CanEdit}
}

func withHelp(p components.FieldProps, help string) components.FieldProps {
	p.Help = help
	return p
}

func withRows(p components.FieldProps, rows int) components.FieldProps {
	p.Rows, p.Mono = rows, true
	return p
}

func itoa(n int) string { return strconv.Itoa(n) }

func joinComma(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

// Section is one part of the rules page, saved on its own: its form holds only its
// inputs, a hidden section=ID and its own Save button. Fields names its fields of
// Form, which are also the fields of models.ProjectRules it saves (they have the same
// names); Inputs are its inputs' names, as an error's key starts (before "[" or ".").
type Section struct {
	ID, Title, TestID string
	Fields, Inputs    []string
}

// Sections are the rules page's sections, in page order; every field of Form is in
// exactly one (the handler's tests hold them to that).
var Sections = []Section{
	{ID: "activities", Title: "Activities", TestID: "rules-activities", Fields: []string{"Activities"}, Inputs: []string{"activities"}},
	{ID: "file-patterns", Title: "File patterns", TestID: "rules-patterns", Fields: []string{"FilePatterns"}, Inputs: []string{"file_patterns"}},
	{ID: "classification", Title: "Classification", TestID: "rules-words",
		Fields: []string{"Always", "AdvisoryWords", "SkipWords", "PromptForAdvisory"},
		Inputs: []string{"always", "advisory_words", "skip_words", "prompt_for_advisory"}},
	{ID: "stacks", Title: "Stacks", TestID: "rules-stacks", Fields: []string{"Stacks"}, Inputs: []string{"stacks"}},
	{ID: "hats", Title: "Hats", TestID: "rules-hats", Fields: []string{"Hats"}, Inputs: []string{"hats"}},
	{ID: "prices", Title: "Prices", TestID: "rules-prices", Fields: []string{"Prices"}, Inputs: []string{"prices"}},
}

// SectionOf returns the ID of the section input (or error key) name belongs to:
// "activities[2].command" and "activities.lint" are activities'; "" for none.
func SectionOf(name string) string {
	root := name
	if k := strings.IndexAny(name, "[."); k >= 0 {
		root = name[:k]
	}
	for _, s := range Sections {
		for _, in := range s.Inputs {
			if in == root {
				return s.ID
			}
		}
	}
	return ""
}

// sectionErrors counts the field errors of section id.
func (v View) sectionErrors(id string) int {
	n := 0
	for k := range v.Errors {
		if SectionOf(k) == id {
			n++
		}
	}
	return n
}

// errorSections are the sections with a field error, in page order.
func (v View) errorSections() []Section {
	var out []Section
	for _, s := range Sections {
		if v.sectionErrors(s.ID) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// sectionAnchor is the element id of section id's form: the nav's links point at it.
func sectionAnchor(id string) string { return "section-" + id }

// sectionBody is the inside of section id's card.
func (v View) sectionBody(id string) templ.Component {
	switch id {
	case "activities":
		return activitiesBody(v)
	case "file-patterns":
		return patternsBody(v)
	case "classification":
		return wordsBody(v)
	case "stacks":
		return stacksBody(v)
	case "hats":
		return hatsBody(v)
	}
	return pricesBody(v)
}

func lower(s string) string { return strings.ToLower(s) }

func errorCount(n int) string {
	if n == 1 {
		return "1 error"
	}
	return strconv.Itoa(n) + " errors"
}
