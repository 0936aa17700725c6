package pages

import (
	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/components"
)

// DeliverableRoutes returns what registers the dashboard's downloads of task
// deliverables, behind the session, for handlers.Deps.Extra:
//
//	GET /tasks/:id/deliverable/files/*   one kept file
//	GET /tasks/:id/deliverable.tar.gz    every kept file
//
// They are the API's handlers (handlers.DeliverableAPI) with the signed-in person as
// the reader: the same checks, the same headers. They are GETs that change nothing, so
// they need no CSRF token.
func (p *Pages) DeliverableRoutes(files models.DeliverableStore) func(e *echo.Echo) {
	api := handlers.NewDeliverableAPI(p.d.Service, files)
	return func(e *echo.Echo) {
		e.GET("/tasks/:id/deliverable/files/*", api.File, p.requireSession, signedInActs)
		e.GET("/tasks/:id/deliverable.tar.gz", api.Archive, p.requireSession, signedInActs)
	}
}

// signedInActs makes the signed-in person the actor the API's handlers read.
func signedInActs(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		handlers.SetActor(c, SignedIn(c))
		return next(c)
	}
}

// DeliverableView is the task page's view of a task's deliverable: the newest verified
// attempt's kept files; nil when it kept none (a task in a git worktree, a task not
// verified yet).
func DeliverableView(taskID int64, attempts []models.Attempt) *components.DeliverableView {
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
