package handlers

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/runner/forgesync"
)

// ForgeDeliverer is what the forge webhook endpoint needs of the forge sync
// (forgesync.Syncer): a delivery checked against the forge's secret and acted on.
type ForgeDeliverer interface {
	Deliver(ctx context.Context, name string, r *http.Request) (forgesync.Delivery, error)
}

// ForgeWebhookAPI receives GitHub's and GitLab's webhook deliveries at
// POST /api/v1/forges/{name}/webhook. It needs no bearer token: a delivery proves
// itself with the forge's webhook secret (GitHub's HMAC signature, GitLab's token),
// and one whose proof fails is 401 and changes nothing. A delivery id seen before is
// 409 (a replay).
type ForgeWebhookAPI struct{ sync ForgeDeliverer }

// NewForgeWebhookAPI returns the endpoint over sync; nil answers 404 (no forge sync
// runs in this process).
func NewForgeWebhookAPI(sync ForgeDeliverer) *ForgeWebhookAPI { return &ForgeWebhookAPI{sync: sync} }

// Register adds the route to e, outside the bearer-authenticated group.
func (h *ForgeWebhookAPI) Register(e *echo.Echo) {
	e.POST(ForgeWebhookPath(":name"), h.Receive)
}

// Receive checks and acts on one delivery.
func (h *ForgeWebhookAPI) Receive(c echo.Context) error {
	if h.sync == nil {
		return echo.NewHTTPError(http.StatusNotFound, "this server does not sync forges")
	}
	d, err := h.sync.Deliver(c.Request().Context(), c.Param("name"), c.Request())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, d)
}
