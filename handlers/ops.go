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
	workers func() (ready bool, status string)
}

// NewOpsHandler returns the health and readiness endpoints. workers, when set, says
// whether workers can start (the sandbox can confine them, or is off) and why not.
func NewOpsHandler(store models.Store, version string, workers func() (bool, string)) *OpsHandler {
	return &OpsHandler{store: store, version: version, workers: workers}
}

// Health answers /healthz: the process is up.
func (h *OpsHandler) Health(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok", "version": h.version})
}

// Ready answers /readyz: the database is reachable, every migration is applied, and
// workers can start; "sandbox" says what confines them.
func (h *OpsHandler) Ready(c echo.Context) error {
	if err := h.store.Ping(c.Request().Context()); err != nil {
		if c.Request().Context().Err() != nil {
			return err // the prober went away: not a database that is down (see ErrorHandler)
		}
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": models.ErrorMessage(err)})
	}
	body := map[string]string{"status": "ready", "dialect": h.store.Dialect()}
	if h.workers != nil {
		ready, status := h.workers()
		body["sandbox"] = status
		if !ready {
			body["status"], body["reason"] = "unavailable", status
			return c.JSON(http.StatusServiceUnavailable, body)
		}
	}
	return c.JSON(http.StatusOK, body)
}
