// Package rules is the project rules page: the rules contract generation uses
// (activity → command, file pattern → activities, always activities, advisory and skip
// words) as a form, and a "try it" form that shows the verification contract the saved
// rules generate for a task, without saving anything.
package rules

import (
	"strconv"
	"time"

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
}

// Form is the rules as typed.
type Form struct {
	Activities    []ActivityRow
	FilePatterns  []PatternRow
	Always        string // comma-separated activities
	AdvisoryWords string // one word or phrase per line
	SkipWords     string // one word or phrase per line
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
	Type     string
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
