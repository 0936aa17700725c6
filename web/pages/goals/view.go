package goals

import (
	"net/url"
	"strconv"
	"time"

	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
)

// View is the goals list's model.
type View struct {
	Meta   layout.PageMeta
	State  string              // the state filter, "" for all
	Sort   string              // the order, models.ListSort*; "" for the default, by number
	After  int64               // the keyset cursor: goals below this id, 0 on the first page
	States []components.Option // the filter's choices
	Sorts  []components.Option // the orders
	Goals  []Row
	Next   string // href of the next (older) page, "" on the last one
	First  string // href of the first (newest) page, "" on the first one
}

// Href returns the list's URL with the state filter, the order and the keyset cursor after
// (0: the first page).
func (v View) Href(after int64) string {
	q := url.Values{}
	if v.State != "" {
		q.Set("state", v.State)
	}
	if v.Sort != "" {
		q.Set("sort", v.Sort)
	}
	if after > 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	if len(q) == 0 {
		return "/goals"
	}
	return "/goals?" + q.Encode()
}

// Row is one goal of the list.
type Row struct {
	ID          int64
	Title       string
	State       string
	Project     string
	Done, Total int
	CreatedAt   time.Time
}

// NewView is the new-goal form's model: its input and field errors.
type NewView struct {
	Meta                        layout.PageMeta
	CSRF                        string
	Title, Description, Project string
	Errors                      map[string]string
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
