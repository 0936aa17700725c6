package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
)

// OpsHandler serves the operations endpoints.
type OpsHandler struct {
	store   models.Store
	version string
}

// NewOpsHandler returns the health and readiness endpoints.
func NewOpsHandler(store models.Store, version string) *OpsHandler {
	return &OpsHandler{store: store, version: version}
}

// Health answers /healthz: the process is up.
func (h *OpsHandler) Health(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok", "version": h.version})
}

// Ready answers /readyz: the database is reachable and every migration is applied.
func (h *OpsHandler) Ready(c echo.Context) error {
	if err := h.store.Ping(c.Request().Context()); err != nil {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": models.ErrorMessage(err)})
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready", "dialect": h.store.Dialect()})
}
