package pages

import "github.com/labstack/echo/v4"

// adminRoutes registers the templates, rules, agents and ledger pages and actions.
func (p *Pages) adminRoutes(g *echo.Group) {}
