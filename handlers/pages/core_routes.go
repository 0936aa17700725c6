package pages

import (
	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/static"
)

// publicRoutes registers what needs no session: static files, login.
func (p *Pages) publicRoutes(e *echo.Echo) {
	e.GET(static.Prefix+"*", echo.WrapHandler(static.Handler()))
	e.GET("/login", p.loginForm)
	e.POST("/login", p.login)
}

// coreRoutes registers overview, goals, tasks and inbox pages and actions.
func (p *Pages) coreRoutes(g *echo.Group) {
	g.POST("/logout", p.logout)
	g.GET("/", p.overviewPage)
}
