// Package agents is the agents page (every agent with its roles, status and current
// task; an add form for admins) and the agent page (details, an edit form and token
// creation for admins). Commands and workdirs are shown to admins only; secrets never:
// a new token is shown once, on the page that answers its creation.
package agents

import (
	"strconv"
	"strings"

	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
)

// Agent statuses.
const (
	StatusBusy     = "busy"
	StatusIdle     = "idle"
	StatusDisabled = "disabled"
)

// View is the agents list page's model.
type View struct {
	Meta layout.PageMeta
	CSRF string
	// Admin shows commands, workdirs and the add form.
	Admin bool
	Rows  []Row
	// Add is the add form as typed; AddErrors its field errors (name, kind, roles,
	// command, workdir, worktree, concurrency, password).
	Add       AgentForm
	AddErrors map[string]string
}

// Row is one agent in the table.
type Row struct {
	ID          int64
	Name        string
	Kind        string
	Roles       []string
	Command     string // empty unless the viewer is an admin
	Concurrency int
	Disabled    bool
	Status      string // busy | idle | disabled
	Running     int    // tasks in progress under an active lease
	Current     []TaskLink
}

// TaskLink links a task.
type TaskLink struct {
	ID    int64
	Title string
}

// AgentForm is the add or edit form as typed.
type AgentForm struct {
	Name        string
	Kind        string
	Roles       string // comma-separated
	Command     string
	Workdir     string
	Worktree    bool
	Concurrency string
	Disabled    bool
}

// AgentView is the agent page's model.
type AgentView struct {
	Meta  layout.PageMeta
	CSRF  string
	Admin bool
	Row   Row
	// Workdir and Worktree are shown to admins only.
	Workdir  string
	Worktree bool
	Edit     AgentForm
	Errors   map[string]string
	// NewToken is the secret of a token just created: shown on this one response and
	// never again. TokenName is its label.
	NewToken  string
	TokenName string
}

// Kinds are the choices of the kind select.
var Kinds = []components.Option{
	{Value: "worker", Label: "worker — run by the runner through its command"},
	{Value: "human", Label: "human — signs in to the dashboard, the API or MCP"},
}

func href(id int64) string { return "/agents/" + strconv.FormatInt(id, 10) }

func taskHref(id int64) string { return "/tasks/" + strconv.FormatInt(id, 10) }

func itoa(n int) string { return strconv.Itoa(n) }

func i64(n int64) string { return strconv.FormatInt(n, 10) }

func roles(r []string) string { return strings.Join(r, ", ") }

func statusState(s string) string {
	switch s {
	case StatusBusy:
		return "in_progress"
	case StatusDisabled:
		return "cancelled"
	}
	return "pending"
}

func statusLabel(r Row) string {
	if r.Status == StatusBusy {
		return "busy " + itoa(r.Running) + "/" + itoa(r.Concurrency)
	}
	return r.Status
}

func props(errs map[string]string, name, label, value string) components.FieldProps {
	return components.FieldProps{Name: name, Label: label, Value: value, Error: errs[name]}
}

func withHelp(p components.FieldProps, help string) components.FieldProps {
	p.Help = help
	return p
}

func withType(p components.FieldProps, typ, autocomplete string) components.FieldProps {
	p.Type, p.Autocomplete = typ, autocomplete
	return p
}

func details(v AgentView) []components.DefItem {
	r := v.Row
	items := []components.DefItem{
		{Term: "Kind", Value: r.Kind},
		{Term: "Roles", Values: r.Roles},
		{Term: "Concurrency", Value: itoa(r.Concurrency)},
		{Term: "Status", Value: statusLabel(r)},
	}
	if v.Admin {
		items = append(items, components.DefItem{Term: "Command", Value: r.Command, Mono: true},
			components.DefItem{Term: "Workdir", Value: v.Workdir, Mono: true})
		if v.Worktree {
			items = append(items, components.DefItem{Term: "Worktree", Value: "a git worktree per task"})
		}
	}
	var cur []string
	for _, t := range r.Current {
		cur = append(cur, "#"+i64(t.ID)+" "+t.Title)
	}
	items = append(items, components.DefItem{Term: "Current tasks", Values: cur})
	return items
}
