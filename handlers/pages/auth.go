package pages

import (
	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/layout"
)

// requireSession resolves the session cookie to an agent or redirects to /login.
func (p *Pages) requireSession(next echo.HandlerFunc) echo.HandlerFunc { return next }

// checkCSRF refuses state-changing requests without the session's CSRF token.
func (p *Pages) checkCSRF(next echo.HandlerFunc) echo.HandlerFunc { return next }

// SignedIn returns the signed-in agent of the request (set by requireSession).
func SignedIn(c echo.Context) *models.Agent { return nil }

// CSRFToken returns the request's session CSRF token, for forms.
func CSRFToken(c echo.Context) string { return "" }

// meta returns the layout's page metadata for the signed-in agent.
func (p *Pages) meta(c echo.Context, title, active string) layout.PageMeta {
	return layout.PageMeta{Title: title, Active: active, Version: p.d.Version}
}
