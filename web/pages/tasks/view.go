package tasks

import (
	"net/url"
	"strconv"

	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
)

// View is the task list's model.
type View struct {
	Meta   layout.PageMeta
	Filter Filter
	States []components.Option
	Roles  []components.Option
	Agents []components.Option
	Sorts  []components.Option
	Tasks  []Row
	Next   string // href of the next page, "" on the last one
	First  string // href of the first page, "" on the first one
	Errors map[string]string
}

// Filter is the list's filter as given in the query.
type Filter struct {
	State    string
	Goal     string
	Assignee string
	Role     string
	Sort     string // models.ListSort*; "" for the default, by number
	After    int64
}

// Row is one task of the list.
type Row struct {
	ID        int64
	Title     string
	State     string
	Override  bool // accepted without passing its checks
	Role      string
	Assignee  string
	GoalID    int64
	GoalTitle string
}

// Href returns the list's URL for f with the keyset cursor after (0: first page).
func (f Filter) Href(after int64) string {
	q := url.Values{}
	for k, v := range map[string]string{"state": f.State, "goal": f.Goal, "assignee": f.Assignee, "role": f.Role, "sort": f.Sort} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if after > 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	if len(q) == 0 {
		return "/tasks"
	}
	return "/tasks?" + q.Encode()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
