// Package queue is "Waiting on you": everything that needs an action the signed-in
// person may take, each with why it waits, since when, its one primary action and the
// others behind a menu. The overview starts with the same list (Section).
package queue

import (
	"strconv"
	"time"

	"github.com/countersign/countersign/web/layout"
)

// View is the queue page's model.
type View struct {
	Meta layout.PageMeta
	List List
}

// List is the queue's items with what their forms need.
type List struct {
	CSRF string
	// Back is where the forms return after acting ("/queue", "/").
	Back string
	// Items are the items shown, the longest waiting first; Total is how many wait.
	Items []Item
	Total int
	// Roles are the viewer's roles, to filter by; Role the one shown ("" all).
	Roles []string
	Role  string
}

// Item is one thing waiting on the viewer.
type Item struct {
	Key       string // kind and id, for data-testid: "verify-12"
	Kind      string
	KindLabel string
	Ref       string // "Task #12", "Goal #3"
	Href      string
	Subject   string
	Why       string
	WaitsOn   string // "as tester", "" when it is theirs for another reason
	Since     time.Time
	Age       string // "3h 20m"
	Primary   Action
	More      []Action
}

// Action is one action of an item: a form that posts to Path (with an optional text
// field), or a link to Href.
type Action struct {
	Name       string
	Label      string
	Path       string
	Href       string
	Variant    string
	Field      string // "reason", "notes", "" for none
	FieldLabel string
	Required   bool
	// Confirm is the question asked before a destructive action (data-confirm).
	Confirm string
}

func itoa(n int) string { return strconv.Itoa(n) }
