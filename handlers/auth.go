package handlers

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
)

const actorKey = "countersign.actor"

// BearerAuth is middleware that requires a valid bearer token (not expired, not
// revoked) and records the token's agent as the request's actor. An attempt token
// reaches only the routes of its scope; any other is 403 attempt_token_scope.
func BearerAuth(tokens Authenticator) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Request().Header.Get("Authorization")
			secret, ok := strings.CutPrefix(h, "Bearer ")
			if !ok {
				return models.Errorf(models.EUNAUTHORIZED, "missing bearer token: send Authorization: Bearer <token>")
			}
			a, err := tokens.Authenticate(c.Request().Context(), strings.TrimSpace(secret))
			if err != nil {
				return err
			}
			if a.Scope != nil && !scopedRoutes[c.Request().Method+" "+c.Path()] {
				return a.Unscoped("call " + c.Request().Method + " " + c.Path())
			}
			SetActor(c, a)
			return next(c)
		}
	}
}

// scopedRoutes are the only routes an attempt token may call (see models.TokenScope):
// create a task, read a task, act on a task, ask about its task. The service checks again which task.
var scopedRoutes = map[string]bool{
	http.MethodPost + " /api/v1/tasks":               true,
	http.MethodGet + " /api/v1/tasks/:id":            true,
	http.MethodPost + " /api/v1/tasks/:id/:action":   true,
	http.MethodPost + " /api/v1/tasks/:id/questions": true,
}

// SetActor records the authenticated agent for the request.
func SetActor(c echo.Context, a *models.Agent) { c.Set(actorKey, a) }

// Actor returns the authenticated agent of the request; middleware guarantees one on
// every route that calls it.
func Actor(c echo.Context) *models.Agent {
	a, _ := c.Get(actorKey).(*models.Agent)
	return a
}
