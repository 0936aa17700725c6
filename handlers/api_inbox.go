package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// InboxAPI serves the inbox's state-changing endpoint; listing is FeedAPI.Inbox.
type InboxAPI struct{ inbox InboxResolver }

// NewInboxAPI returns the inbox endpoints over svc.
func NewInboxAPI(inbox InboxResolver) *InboxAPI { return &InboxAPI{inbox: inbox} }

// Resolve answers POST /inbox/{id}/resolve {note}: it dismisses an open advisory item
// and returns it resolved. Only a lead or an exec may (403); a blocked item or an
// escalation, or an item already resolved, is a 409.
func (h *InboxAPI) Resolve(c echo.Context) error {
	id, err := PathID(c, "id")
	if err != nil {
		return err
	}
	var in struct {
		Note string `json:"note"`
	}
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	it, err := h.inbox.ResolveInboxItem(c.Request().Context(), Actor(c), id, in.Note)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, it)
}
