package pages

import (
	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/components"
)

// deliverableRoutes registers the dashboard's downloads of task deliverables on g
// (behind the session):
//
//	GET /tasks/:id/deliverable/files/*   one kept file
//	GET /tasks/:id/deliverable.tar.gz    every kept file
//
// They are the API's handlers (handlers.DeliverableAPI) with the signed-in person as
// the reader: the same checks, the same headers.
func (p *Pages) deliverableRoutes(g *echo.Group) {
	api := handlers.NewDeliverableAPI(p.svc.Store(), p.d.Deliverables)
	g.GET("/tasks/:id/deliverable/files/*", api.File, signedInActs)
	g.GET("/tasks/:id/deliverable.tar.gz", api.Archive, signedInActs)
}

// signedInActs makes the signed-in person the actor the API's handlers read.
func signedInActs(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		handlers.SetActor(c, SignedIn(c))
		return next(c)
	}
}

// deliverableView is the task page's view of a task's deliverable: the newest verified
// attempt's kept files; nil when it kept none (a task in a git worktree, a task not
// verified yet).
func deliverableView(taskID int64, attempts []models.Attempt) *components.DeliverableView {
	a, err := models.LatestDeliverable(taskID, attempts)
	if err != nil {
		return nil
	}
	v := &components.DeliverableView{TaskID: taskID, Attempt: a.Number, Truncated: a.Deliverable.Truncated, Omitted: a.Deliverable.Omitted}
	for _, f := range a.Deliverable.Files {
		v.Files = append(v.Files, components.DeliverableFile{Path: f.Path, Size: f.Size, SHA256: f.SHA256})
	}
	return v
}
