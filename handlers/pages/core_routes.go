package pages

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/static"
)

// publicRoutes registers what needs no session: static files, login.
func (p *Pages) publicRoutes(e *echo.Echo) {
	e.GET(static.Prefix+"*", handlers.ShapeErrors(static.Handler())) // a missing file is the 404 page
	e.GET("/favicon.ico", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	e.GET("/login", p.loginForm)
	e.POST("/login", p.login)
}

// coreRoutes registers overview, goals, tasks and inbox pages and actions:
//
//	POST /logout
//	GET  /                                  overview
//	GET  /goals, /goals/new, /goals/:id     POST /goals, /goals/:id/{verify,reject,runs}
//	GET  /tasks, /tasks/:id                 POST /tasks/:id/action/:action, /tasks/:id/recheck
//	GET  /queue, /queue/count               "Waiting on you" and its count (JSON)
//	GET  /inbox                             POST /inbox/:id/dismiss (an advisory item)
//	                                        (its other forms post to the task actions)
//	GET  /search?q=                         tasks, goals and agents found (search.go)
func (p *Pages) coreRoutes(g *echo.Group) {
	g.POST("/logout", p.logout)
	g.GET("/", p.overviewPage)

	g.GET("/goals", p.goalsPage)
	g.GET("/goals/new", p.newGoalPage)
	g.POST("/goals", p.createGoal)
	g.GET("/goals/:id", p.goalPage)
	g.POST("/goals/:id/verify", p.verifyGoal)
	g.POST("/goals/:id/reject", p.rejectGoal)
	g.POST("/goals/:id/runs", p.startRun)

	g.GET("/tasks", p.tasksPage)
	g.GET("/tasks/:id", p.taskPage)
	g.POST("/tasks/:id/action/:action", p.taskAction)
	g.POST("/tasks/:id/merge", p.taskMerge)
	g.POST("/tasks/:id/budget", p.taskBudget)
	g.POST("/goals/:id/budget", p.goalBudget)
	g.POST("/goals/:id/merge", p.goalMerge)
	g.POST("/tasks/:id/recheck", p.taskRecheck)
	p.outputRoutes(g) // GET /tasks/:id/output
	g.POST("/goals/:id/recheck", p.goalRecheck)

	g.GET("/queue", p.queuePage)
	g.GET("/queue/count", p.queueCountJSON)
	g.GET("/inbox", p.inboxPage)
	g.POST("/inbox/:id/"+actDismiss, p.dismissAdvisory)
	g.POST("/tasks/:id/advisory/:action", p.resolveAdvisory)
	g.GET("/search", p.searchPage)
}
