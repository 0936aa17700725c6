package goals

import (
	"strconv"
	"time"

	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/layout"
)

// View is the goals list's model.
type View struct {
	Meta   layout.PageMeta
	State  string              // the state filter, "" for all
	States []components.Option // the filter's choices
	Goals  []Row
	More   bool // the list was cut at its limit
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
