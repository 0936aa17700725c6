// Package layout holds the page frames of the dashboard: Page, for every signed-in
// page (navigation, flash, live-update hooks, footer), and Bare, for the login page.
package layout

import (
	"strconv"
	"strings"
)

// PageMeta is everything the frame of a page needs; handlers fill it once per request.
type PageMeta struct {
	// Title is the page's own title; the document title is "<Title> · Countersign".
	Title string
	// Active is the key of the highlighted navigation item (see NavItems).
	Active string
	// Agent is the signed-in agent, nil on pages without a session.
	Agent *NavAgent
	// CSRF is the session's CSRF token, used by the logout form.
	CSRF string
	// InboxCount is the number of unresolved inbox items, shown as a badge on Inbox.
	InboxCount int
	// QueueCount is the number of items waiting on the signed-in person ("Waiting on
	// you"), shown as a badge on its navigation item and kept current by live.js.
	QueueCount int
	// LastEventID is the id of the newest event the page reflects; live.js resumes
	// the event stream after it (<body data-last-event>).
	LastEventID int64
	// Flash is a one-off message shown above the page; FlashKind is info, success,
	// warning or error.
	Flash     string
	FlashKind string
	// Version is the build version shown in the footer.
	Version string
	// Banner is a standing warning shown on every page while it holds, such as the
	// sandbox being off; empty shows none.
	Banner string
	// LiveRefresh names what the page shows so that live.js re-fetches its
	// [data-live-region] elements when a matching event arrives: "task:12",
	// "goal:3", "any", or several separated by spaces. Empty: no refresh.
	LiveRefresh string
	// Search is the query shown in the navigation's search box (the search page's own).
	Search string
}

// NavAgent is the signed-in agent as shown in the navigation bar.
type NavAgent struct {
	Name  string
	Roles []string
}

// NavItem is one entry of the main navigation.
type NavItem struct {
	Key   string // the value of PageMeta.Active that highlights it
	Label string
	Href  string
}

// Navigation keys, the values of PageMeta.Active.
const (
	NavOverview  = "overview"
	NavQueue     = "queue"
	NavGoals     = "goals"
	NavTasks     = "tasks"
	NavInbox     = "inbox"
	NavTemplates = "templates"
	NavAgents    = "agents"
	NavLedger    = "ledger"
	NavRules     = "rules"
)

// NavItems is the main navigation in display order; handlers route these paths.
var NavItems = []NavItem{
	{NavOverview, "Overview", "/"},
	{NavQueue, "Waiting on you", "/queue"},
	{NavGoals, "Goals", "/goals"},
	{NavTasks, "Tasks", "/tasks"},
	{NavInbox, "Inbox", "/inbox"},
	{NavTemplates, "Templates", "/templates"},
	{NavAgents, "Agents", "/agents"},
	{NavLedger, "Ledger", "/ledger"},
	{NavRules, "Rules", "/rules"},
}

// Shortcut is one keyboard shortcut: the keys pressed in turn, what it does, and
// the name shortcuts.js knows it by (data-testid "shortcut-<Action>" in the list).
type Shortcut struct {
	Keys   []string
	Label  string
	Action string
}

// Shortcuts lists the keyboard shortcuts static/shortcuts.js handles, in the order
// the "?" overlay shows them.
var Shortcuts = []Shortcut{
	{[]string{"g", "i"}, "Go to the inbox", "inbox"},
	{[]string{"g", "q"}, "Go to what waits on you (/queue)", "queue"},
	{[]string{"g", "t"}, "Go to the tasks", "tasks"},
	{[]string{"g", "o"}, "Go to the goals", "goals"},
	{[]string{"/"}, "Search", "search"},
	{[]string{"j"}, "Next item in the list", "next"},
	{[]string{"k"}, "Previous item in the list", "previous"},
	{[]string{"Enter"}, "Open the selected item (also o)", "open"},
	{[]string{"a"}, "Take the selected item's primary action", "primary"},
	{[]string{"?"}, "Show or hide this list", "help"},
	{[]string{"Esc"}, "Close this list; leave a field", "escape"},
}

// LogoutPath is where the navigation's logout form posts.
const LogoutPath = "/logout"

// DocumentTitle returns the <title> text of a page titled title.
func DocumentTitle(title string) string {
	if title == "" {
		return "Countersign"
	}
	return title + " · Countersign"
}

func roles(a *NavAgent) string { return strings.Join(a.Roles, ", ") }

func lastEvent(id int64) string { return strconv.FormatInt(id, 10) }

func inboxLabel(n int) string {
	if n == 1 {
		return "1 item waiting"
	}
	return strconv.Itoa(n) + " items waiting"
}

func queueLabel(n int) string {
	if n == 1 {
		return "1 item waiting on you"
	}
	return strconv.Itoa(n) + " items waiting on you"
}

func countText(n int) string {
	if n > 99 {
		return "99+"
	}
	return strconv.Itoa(n)
}
