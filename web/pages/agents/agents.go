// Package agents is the agents page (every agent with its roles, status and current
// task; the scorecard ranking and the model gateway's spend per agent per day; an add
// form for admins) and the agent page (details, its sandbox, an edit form
// and token creation for admins; its tokens with a revoke button for admins and the
// agent itself; the history of its changes). Commands, workdirs and sandboxes are
// shown to admins only; secrets never: a new token is shown once, on the page that
// answers its creation.
package agents

import (
	"strconv"
	"strings"
	"time"

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
	// WorkspaceUsage is the disk the task workspaces use, for people ("1.5 MiB"), and
	// WorkspaceBytes the same in bytes; empty when the server runs no runner.
	WorkspaceUsage string
	WorkspaceBytes int64
	// Gateway is the runner's model gateway and its runs' network; nil when the
	// server runs no runner.
	Gateway *Gateway
	// Board ranks the agents (Ranking) and the task roles (RoleRanking) by their
	// scorecards over the last Days days (7 or 30), best first.
	Board Board
}

// Gateway is what the agents page says of the model gateway.
type Gateway struct {
	Serving   bool
	Addr      string
	Providers string // "Anthropic, OpenAI", or "none" when no key is set
	Live      int
	Network   string // private or ports
	Egress    string // the hosts allowed, "none" when none
}

// Board is the agents page's ranking.
type Board struct {
	Days        int
	Ranking     []components.ScoreRow
	RoleRanking []components.ScoreRow
	// Spend is what the model gateway metered per agent per day in the window; nil
	// on a live re-fetch, which counts nothing again.
	Spend *components.ModelSpendProps
	// Honesty and HonestyModels are the honesty section per agent and per model; nil
	// on a live re-fetch.
	Honesty, HonestyModels []components.HonestyRow
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
	// Forge names the forge a worktree worker's verified branches go to ("" none).
	Forge string
	// The sandbox settings (workers): paths and ports, comma- or line-separated.
	SandboxRead      string
	SandboxWrite     string
	SandboxConnect   string
	SandboxAllowUnix bool
	// PassEnv names variables of the runner's environment (comma-separated) and
	// DailyBudgetUSD caps a day's spend (blank: none); workers only.
	PassEnv        string
	DailyBudgetUSD string
}

// Sandbox is what a worker's confined processes may reach besides their workspace,
// shown to admins.
type Sandbox struct {
	Read      []string
	Write     []string
	Connect   []string
	AllowUnix bool
}

// TokenRow is one of an agent's tokens: never its secret.
type TokenRow struct {
	ID       int64
	Name     string
	Status   string // active | expired | revoked
	Created  time.Time
	Expires  *time.Time // nil: never
	LastUsed *time.Time // nil: never used
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
	// Forges are the choices of the edit form's Forge select, "none" first; empty
	// when there is no forge (then the select is left out).
	Forges []components.Option
	// NewToken is the secret of a token just created: shown on this one response and
	// never again. TokenName is its label.
	NewToken  string
	TokenName string
	// Sandbox is shown to admins, for workers.
	Sandbox Sandbox
	// SpentToday and Spent7Days are what the agent's attempts used since the start of
	// the UTC day and over the last 7 days; DailyBudget its daily cap ("" for none).
	SpentToday, Spent7Days, DailyBudget string
	// Effective lists, one grant per line, everything the worker's confined processes
	// may touch (defaults included); empty when no runner runs here.
	Effective []string
	// Tokens are listed to admins and to the agent itself (ManageTokens), who may
	// revoke them.
	ManageTokens bool
	Tokens       []TokenRow
	// TokenExpires is the lifetime chosen in the create form.
	TokenExpires string
	// History is what changed about the agent, newest first; the values of the
	// fields only admins see are left out for others.
	History []components.HistoryItem
	// Password is the password form the viewer gets: PasswordSet for an admin on a
	// human's page, PasswordChange for a person on their own, "" for none.
	Password string
	// PasswordHelp states the length rule under the new password field.
	PasswordHelp string
}

// The password forms of an agent's page.
const (
	PasswordSet    = "set"    // an admin sets or resets it: no current password asked
	PasswordChange = "change" // a person changes their own: the current one asked
)

// TokenLifetimes are the choices of the token form's lifetime.
var TokenLifetimes = []components.Option{
	{Value: "30d", Label: "30 days"},
	{Value: "90d", Label: "90 days"},
	{Value: "365d", Label: "1 year"},
	{Value: "never", Label: "never expires"},
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
		{Term: "Spent today", Value: v.SpentToday},
		{Term: "Spent in 7 days", Value: v.Spent7Days},
		{Term: "Daily budget", Value: v.DailyBudget},
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

func tokenHref(agentID, tokenID int64) string {
	return href(agentID) + "/tokens/" + i64(tokenID) + "/revoke"
}

func sandboxItems(s Sandbox) []components.DefItem {
	list := func(term string, v []string) components.DefItem {
		if len(v) == 0 {
			return components.DefItem{Term: term, Value: "nothing beyond the defaults"}
		}
		return components.DefItem{Term: term, Values: v, Mono: true}
	}
	unix := "no"
	if s.AllowUnix {
		unix = "yes"
	}
	return []components.DefItem{
		list("Reads", s.Read),
		list("Writes", s.Write),
		list("Connects to TCP ports", s.Connect),
		{Term: "Unix sockets", Value: unix},
	}
}

// passwordTitle names the password form of mode.
func passwordTitle(mode string) string {
	if mode == PasswordChange {
		return "Change password"
	}
	return "Set password"
}
