// Package components holds the dashboard's shared templ components: state badges,
// buttons and CSRF-protected POST buttons, form fields with their errors, flash
// messages, empty states, progress bars, stat tiles, timelines, log blocks, the live
// feed, definition lists and pagination. Pages only assemble these.
//
// Every component escapes what it renders (templ does); none uses templ.Raw. Every
// interactive element carries a data-testid for browser tests. Every state-changing
// button is a form POST with a CSRF field, so the dashboard works without JavaScript.
package components

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// CSRFFieldName is the name of the hidden form field that carries the CSRF token;
// the handlers' CSRF middleware looks it up as "form:csrf".
const CSRFFieldName = "csrf"

// Button variants understood by Button, LinkButton and PostButton.
const (
	VariantPrimary   = "primary"
	VariantSecondary = "secondary"
	VariantDanger    = "danger"
	VariantLink      = "link"
)

// The questions asked before destructive actions (ButtonProps.Confirm, data-confirm).
const (
	ConfirmCancelTask = "Cancel this task? Its work stops and it cannot be resumed."
	ConfirmRejectGoal = "Reject this goal? It goes back to active and the fix tasks are created."
	ConfirmRemoveStep = "Remove this step from the template? Its fields are lost unless you leave without saving."
	ConfirmDismiss    = "Dismiss this item? It leaves the inbox and every queue."
)

// ConfirmFor returns the question asked before the task or inbox action act ("" for
// an action that needs none): cancelling a task (also an advisory prompt's cancel)
// and dismissing an item.
func ConfirmFor(act string) string {
	switch act {
	case "cancel", "advisory-cancel":
		return ConfirmCancelTask
	case "dismiss":
		return ConfirmDismiss
	}
	return ""
}

// Flash kinds understood by Flash.
const (
	FlashInfo    = "info"
	FlashSuccess = "success"
	FlashWarning = "warning"
	FlashError   = "error"
)

// StateClass returns the CSS class that colours an element for state ("in_progress"
// → "state-in_progress"). Anything that is not a plain lower-case identifier maps to
// "state-unknown", so a hostile or unexpected state can never inject a class name.
func StateClass(state string) string {
	return "state-" + stateKey(state)
}

func stateKey(state string) string {
	if state == "" || len(state) > 40 {
		return "unknown"
	}
	for _, r := range state {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' {
			return "unknown"
		}
	}
	return state
}

// StateLabel returns the human label of a state: "pending_verify" → "pending verify".
func StateLabel(state string) string {
	if state == "" {
		return "unknown"
	}
	return strings.ReplaceAll(state, "_", " ")
}

// btnClass returns the classes of a button of the given variant; "small" may be
// appended to any variant ("danger small") to get the compact size.
func btnClass(variant string) string {
	classes := []string{"btn"}
	for _, v := range strings.Fields(variant) {
		switch v {
		case VariantPrimary, VariantSecondary, VariantDanger, VariantLink:
			classes = append(classes, "btn-"+v)
		case "small", "sm":
			classes = append(classes, "btn-small")
		}
	}
	if len(classes) == 1 || (len(classes) == 2 && classes[1] == "btn-small") {
		classes = append(classes, "btn-secondary")
	}
	return strings.Join(classes, " ")
}

// slug turns a label into a lower-case, dash-separated token for derived test ids.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func fieldID(p FieldProps) string {
	if p.ID != "" {
		return p.ID
	}
	return FieldID(p.Name)
}

// FieldID is the element id Field, TextArea, Select and Checkbox give the input
// named name when FieldProps.ID is not set: what a link to the input points at.
func FieldID(name string) string { return "f-" + slugOrName(name) }

func slugOrName(name string) string {
	if s := slug(name); s != "" {
		return s
	}
	return "field"
}

// describedBy lists the ids of the help and error texts of a field for aria-describedby.
func describedBy(p FieldProps) string {
	var ids []string
	if p.Error != "" {
		ids = append(ids, fieldID(p)+"-error")
	}
	if p.Help != "" {
		ids = append(ids, fieldID(p)+"-help")
	}
	return strings.Join(ids, " ")
}

func percent(done, total int) int {
	if total <= 0 || done <= 0 {
		return 0
	}
	if done >= total {
		return 100
	}
	return done * 100 / total
}

func itoa(n int) string { return strconv.Itoa(n) }

// progressLabel names a progress bar for assistive technology.
func progressLabel(done, total int) string {
	if total <= 0 {
		return "no tasks yet"
	}
	return itoa(done) + " of " + itoa(total) + " done"
}

// Plural writes a count with its noun: "1 task", "0 tasks", "3 tasks". one and many
// are the singular and plural forms ("criterion", "criteria").
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// PaginationProps describes one page of a list for Pagination.
type PaginationProps struct {
	// URL is the current request URL (path and query); the page links keep its other
	// query parameters and replace Param.
	URL string
	// Param is the query parameter that holds the 1-based page number; default "page".
	Param string
	// Page is the current 1-based page.
	Page int
	// PerPage is the number of items per page.
	PerPage int
	// Total is the number of items in the whole list; -1 when unknown, in which case
	// HasNext decides whether a next link is shown.
	Total int
	// HasNext is used when Total is unknown (-1).
	HasNext bool
	// TestID prefixes the test ids of the links; default "pagination".
	TestID string
}

func (p PaginationProps) pages() int {
	if p.Total < 0 || p.PerPage <= 0 {
		return 0
	}
	if p.Total == 0 {
		return 1
	}
	return (p.Total + p.PerPage - 1) / p.PerPage
}

func (p PaginationProps) page() int {
	if p.Page < 1 {
		return 1
	}
	return p.Page
}

func (p PaginationProps) hasPrev() bool { return p.page() > 1 }

func (p PaginationProps) hasNext() bool {
	if n := p.pages(); n > 0 {
		return p.page() < n
	}
	return p.HasNext
}

func (p PaginationProps) href(page int) string {
	u, err := url.Parse(p.URL)
	if err != nil {
		u = &url.URL{}
	}
	q := u.Query()
	if page <= 1 {
		q.Del(orDefault(p.Param, "page"))
	} else {
		q.Set(orDefault(p.Param, "page"), strconv.Itoa(page))
	}
	u.RawQuery = q.Encode()
	// Only the path and query are kept: page links never leave the site.
	out := u.EscapedPath()
	if out == "" {
		out = "."
	}
	if u.RawQuery != "" {
		out += "?" + u.RawQuery
	}
	return out
}

func (p PaginationProps) summary() string {
	if n := p.pages(); n > 0 {
		return fmt.Sprintf("Page %d of %d · %d items", p.page(), n, p.Total)
	}
	return fmt.Sprintf("Page %d", p.page())
}

func rowsOr(n int) int {
	if n <= 0 {
		return 5
	}
	return n
}

func flashClass(kind string) string {
	switch kind {
	case FlashSuccess, FlashWarning, FlashError:
		return "flash-" + kind
	}
	return "flash-info"
}

func tileClass(state string) string {
	if state == "" {
		return ""
	}
	return StateClass(state)
}

func tileTestID(label, state string) string {
	if state != "" {
		return "stat-" + stateKey(state)
	}
	return "stat-" + slug(label)
}

// feedState maps an event type ("task.verified") to the state that colours it.
func feedState(typ string) string {
	if i := strings.LastIndexByte(typ, '.'); i >= 0 {
		return typ[i+1:]
	}
	return typ
}

// safeHref keeps only same-site references (paths, queries, fragments); anything with
// a scheme or a host ("javascript:", "//evil") becomes "#", so a URL built from data
// can never leave the site or run script.
func safeHref(h string) string {
	if h == "" {
		return "#"
	}
	u, err := url.Parse(h)
	if err != nil || u.Scheme != "" || u.Host != "" || strings.HasPrefix(h, "//") || strings.HasPrefix(h, `/\`) {
		return "#"
	}
	return h
}

// DiffLine is one line of a unified diff as History shows it: its text (with its
// newline) and the class that colours it.
type DiffLine struct {
	Text  string
	Class string
}

// DiffLines splits a unified diff into lines classed diff-hunk ("@@"), diff-del ("-"),
// diff-add ("+") or diff-note (the truncation note), and diff-ctx otherwise.
func DiffLines(diff string) []DiffLine {
	var out []DiffLine
	for _, l := range strings.SplitAfter(diff, "\n") {
		if l == "" {
			continue
		}
		c := "diff-ctx"
		switch {
		case strings.HasPrefix(l, "@@"):
			c = "diff-hunk"
		case strings.HasPrefix(l, "-"):
			c = "diff-del"
		case strings.HasPrefix(l, "+"):
			c = "diff-add"
		case strings.HasPrefix(l, "…"):
			c = "diff-note"
		}
		out = append(out, DiffLine{Text: l, Class: c})
	}
	return out
}

// Bytes writes n bytes for people, in binary units: "512 B", "1.5 MiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
