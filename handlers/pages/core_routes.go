package pages

import "github.com/labstack/echo/v4"

// publicRoutes registers what needs no session: static files, login.
func (p *Pages) publicRoutes(e *echo.Echo) {}

// coreRoutes registers overview, goals, tasks and inbox pages and actions.
func (p *Pages) coreRoutes(g *echo.Group) {}
