package handlers

import (
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
)

const actorKey = "countersign.actor"

// BearerAuth is middleware that requires a valid bearer token and records the token's
// agent as the request's actor.
func BearerAuth(svc *models.Service) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Request().Header.Get("Authorization")
			secret, ok := strings.CutPrefix(h, "Bearer ")
			if !ok {
				return models.Errorf(models.EUNAUTHORIZED, "missing bearer token: send Authorization: Bearer <token>")
			}
			a, err := svc.Authenticate(c.Request().Context(), strings.TrimSpace(secret))
			if err != nil {
				return err
			}
			SetActor(c, a)
			return next(c)
		}
	}
}

// SetActor records the authenticated agent for the request.
func SetActor(c echo.Context, a *models.Agent) { c.Set(actorKey, a) }

// Actor returns the authenticated agent of the request; middleware guarantees one on
// every route that calls it.
func Actor(c echo.Context) *models.Agent {
	a, _ := c.Get(actorKey).(*models.Agent)
	return a
}
