package pages

import (
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/pages/search"
)

// searchLimit is how many tasks, goals and agents the search page shows at most.
const searchLimit = 25

// searchPage answers GET /search?q=: the tasks, goals and agents q finds (by number,
// title, brief or name; models.SearchService), grouped by kind.
func (p *Pages) searchPage(c echo.Context) error {
	ctx := c.Request().Context()
	found, err := p.svc.Search.Search(ctx, SignedIn(c), c.QueryParam("q"), searchLimit)
	if err != nil {
		return err
	}
	v := search.View{Query: found.Query, Short: found.Short, MinText: models.MinSearchText, Limit: searchLimit}
	if len(found.Tasks) > 0 {
		dir, err := p.agents(ctx)
		if err != nil {
			return err
		}
		for _, t := range found.Tasks {
			detail := t.Role
			if who := dir.name(t.AssigneeID); who != "" {
				detail += " · " + who
			}
			v.Tasks = append(v.Tasks, search.Hit{Href: "/tasks/" + itoa(t.ID), ID: t.ID, Title: t.Title,
				State: string(t.State), Detail: detail, Updated: t.UpdatedAt})
		}
	}
	for _, g := range found.Goals {
		v.Goals = append(v.Goals, search.Hit{Href: "/goals/" + itoa(g.ID), ID: g.ID, Title: g.Title,
			State: string(g.State), Detail: g.Project, Updated: g.UpdatedAt})
	}
	for _, a := range found.Agents {
		v.Agents = append(v.Agents, search.Hit{Href: "/agents/" + itoa(a.ID), ID: a.ID, Title: a.Name,
			Detail: string(a.Kind) + " · " + strings.Join(a.Roles, ", ")})
	}
	title := "Search"
	if v.Query != "" {
		title = "Search: " + v.Query
	}
	v.Meta = p.meta(c, title, "")
	v.Meta.Search = v.Query
	return ok(c, search.Page(v))
}
