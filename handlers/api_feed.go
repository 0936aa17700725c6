package handlers

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
)

// FeedAPI serves the read-only feeds: /inbox, /events and /ledger.
type FeedAPI struct{ store models.Store }

// NewFeedAPI returns the feed endpoints over svc.
func NewFeedAPI(store models.Store) *FeedAPI { return &FeedAPI{store: store} }

// Inbox answers GET /inbox?kind=&all=1.
func (h *FeedAPI) Inbox(c echo.Context) error {
	var fe models.FieldErrors
	f := models.InboxFilter{Kind: c.QueryParam("kind"), IncludeResolved: c.QueryParam("all") == "1", Limit: QueryLimit(c, &fe)}
	if f.Kind != "" && !slices.Contains(models.InboxKinds, f.Kind) {
		fe.Add("kind", "must be one of "+strings.Join(models.InboxKinds, ", "))
	}
	if err := fe.Err(); err != nil {
		return err
	}
	items, err := h.store.ListInbox(c.Request().Context(), f)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"items": nonNil(items)})
}

// Events answers GET /events?after=ID&limit=N, oldest first.
func (h *FeedAPI) Events(c echo.Context) error {
	var fe models.FieldErrors
	after := QueryInt(c, "after", &fe)
	limit := QueryLimit(c, &fe)
	if limit == 0 {
		limit = DefaultLimit
	}
	if err := fe.Err(); err != nil {
		return err
	}
	evs, err := h.store.ListEvents(c.Request().Context(), after, limit)
	if err != nil {
		return err
	}
	viewer := Actor(c)
	diffs := NewTemplateChangeDiffs(h.store, viewer)
	for i := range evs {
		// Agents' commands and sandboxes for admins only; held-out tests (in a
		// template change's diff) for those who may set them.
		evs[i] = diffs.Event(c.Request().Context(), evs[i].VisibleTo(viewer))
	}
	return c.JSON(http.StatusOK, map[string]any{"events": nonNil(evs)})
}
