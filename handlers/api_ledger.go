package handlers

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/ledger"
)

// LedgerAPI serves /api/v1/ledger: the outbox entries with their status and receipt,
// and the exact bytes posted.
type LedgerAPI struct {
	store models.Store
	info  ledger.Info
}

// NewLedgerAPI returns the ledger endpoints.
func NewLedgerAPI(store models.Store, info ledger.Info) *LedgerAPI {
	return &LedgerAPI{store: store, info: info}
}

// ledgerView is one entry as the API shows it.
type ledgerView struct {
	models.LedgerEntry
	Summarised bool   `json:"summarised"` // the message carries the payload's hash; GET …/payload serves it
	HashScan   string `json:"hashscan,omitempty"`
}

func (h *LedgerAPI) view(e models.LedgerEntry) ledgerView {
	v := ledgerView{LedgerEntry: e, Summarised: len(e.Payload) > 0}
	if e.Status == models.LedgerPosted {
		// The topic, not a transaction: receipts carry no consensus timestamp, so ours
		// is an upper bound; the entry is found on the topic by its sequence number.
		v.HashScan = h.info.TopicURL()
	}
	return v
}

// List answers GET /ledger?status=&task=&goal=&after=&limit=, oldest first; with
// task= (goal=) it is the chain of that task (goal): task.complete, task.revoked,
// task.complete again….
func (h *LedgerAPI) List(c echo.Context) error {
	var fe models.FieldErrors
	f := models.LedgerFilter{Status: c.QueryParam("status"), AfterID: QueryInt(c, "after", &fe), Limit: QueryLimit(c, &fe),
		TaskID: QueryInt(c, "task", &fe), GoalID: QueryInt(c, "goal", &fe)}
	switch f.Status {
	case "", models.LedgerPending, models.LedgerPosted, models.LedgerFailed:
	default:
		fe.Add("status", "must be pending, posted or failed")
	}
	if f.Limit == 0 {
		f.Limit = DefaultLimit
	}
	if err := fe.Err(); err != nil {
		return err
	}
	entries, err := h.store.ListLedger(c.Request().Context(), f)
	if err != nil {
		return err
	}
	out := make([]ledgerView, len(entries))
	for i, e := range entries {
		out[i] = h.view(e)
	}
	return c.JSON(http.StatusOK, map[string]any{"ledger": h.info.Kind, "entries": out})
}

// Message answers GET /ledger/{id}: the exact bytes posted (or to be posted), with the
// entry's status and receipt in headers.
func (h *LedgerAPI) Message(c echo.Context) error {
	e, err := h.entry(c)
	if err != nil {
		return err
	}
	hd := c.Response().Header()
	hd.Set("X-Ledger-Status", e.Status)
	hd.Set("X-Ledger-Type", e.Type)
	if e.Sequence > 0 {
		hd.Set("X-Ledger-Sequence", strconv.FormatInt(e.Sequence, 10))
		hd.Set("X-Ledger-Running-Hash", e.RunningHash)
	}
	return c.Blob(http.StatusOK, "application/json", e.Message)
}

// Payload answers GET /ledger/{id}/payload: the full payload a summarised message
// carries the SHA-384 of, or the message itself when it was posted whole.
func (h *LedgerAPI) Payload(c echo.Context) error {
	e, err := h.entry(c)
	if err != nil {
		return err
	}
	if len(e.Payload) == 0 {
		return c.Blob(http.StatusOK, "application/json", e.Message)
	}
	return c.Blob(http.StatusOK, "application/json", e.Payload)
}

func (h *LedgerAPI) entry(c echo.Context) (*models.LedgerEntry, error) {
	id, err := PathID(c, "id")
	if err != nil {
		return nil, err
	}
	return h.store.GetLedgerEntry(c.Request().Context(), id)
}
