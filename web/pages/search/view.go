package search

import (
	"strconv"
	"time"

	"github.com/countersign/countersign/web/layout"
)

// View is the search page's model: the query and what it found, by kind.
type View struct {
	Meta   layout.PageMeta
	Query  string
	Tasks  []Hit
	Goals  []Hit
	Agents []Hit
	// Short: the query was too short to search titles and briefs (only ids and
	// agents were looked up); MinText is how many characters it takes.
	Short   bool
	MinText int
	// Limit is how many of each kind are shown at most.
	Limit int
}

// Hit is one result: where it links, its number, title and state, and a line of
// context (role and assignee, project, roles).
type Hit struct {
	Href    string
	ID      int64
	Title   string
	State   string
	Detail  string
	Updated time.Time
}

// Found reports whether anything was found.
func (v View) Found() bool { return len(v.Tasks)+len(v.Goals)+len(v.Agents) > 0 }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func count(n, limit int) string {
	if n >= limit {
		return "first " + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}
