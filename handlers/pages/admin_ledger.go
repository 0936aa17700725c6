package pages

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/ledger"
	"github.com/countersign/countersign/web/layout"
	ledgerpage "github.com/countersign/countersign/web/pages/ledger"
)

// ledgerPageSize is the number of entries per ledger page.
const ledgerPageSize = 50

func (p *Pages) ledgerRow(e models.LedgerEntry) ledgerpage.Row {
	r := ledgerpage.Row{ID: e.ID, Type: e.Type, Status: e.Status, Attempts: e.Attempts, LastError: e.LastError,
		Override: e.Override, Kind: e.Kind, Sequence: e.Sequence, RunningHash: e.RunningHash, TxID: e.TxID, Summarised: len(e.Payload) > 0}
	if e.TaskID != nil {
		r.TaskID = *e.TaskID
	}
	if e.GoalID != nil {
		r.GoalID = *e.GoalID
	}
	if e.RevokesID != nil {
		r.RevokesID = *e.RevokesID
	}
	if e.ConsensusAt != nil {
		r.ConsensusAt = *e.ConsensusAt
		// The topic: our consensus time is an upper bound read with the receipt.
		r.HashScan = p.d.Ledger.TopicURL()
	}
	return r
}

func (p *Pages) ledgerKind() string {
	if p.d.Ledger.Kind == "" {
		return "local"
	}
	return p.d.Ledger.Kind
}

// ledgerView reads one page of entries after the id in ?after=, of one task's or
// goal's chain when f says so.
func (p *Pages) ledgerView(c echo.Context, after int64, f models.LedgerFilter) (ledgerpage.View, error) {
	v := ledgerpage.View{Meta: p.meta(c, "Ledger", layout.NavLedger), CSRF: CSRFToken(c), Kind: p.ledgerKind(), After: after,
		TaskID: f.TaskID, GoalID: f.GoalID}
	v.Meta.LiveRefresh = "any" // entries are written and posted as work is verified
	if v.Kind == "hcs" {
		v.TopicID = p.d.Ledger.TopicID
		v.TopicURL = p.d.Ledger.TopicURL()
	}
	// One more than a page tells whether there is a next page.
	f.AfterID, f.Limit = after, ledgerPageSize+1
	entries, err := p.svc.Store().ListLedger(c.Request().Context(), f)
	if err != nil {
		return v, err
	}
	if len(entries) > ledgerPageSize {
		entries = entries[:ledgerPageSize]
		v.Next = entries[len(entries)-1].ID
	}
	for _, e := range entries {
		v.Rows = append(v.Rows, p.ledgerRow(e))
	}
	return v, nil
}

// ledgerList answers GET /ledger[?after=ID][&task=ID|&goal=ID].
func (p *Pages) ledgerList(c echo.Context) error {
	var fe models.FieldErrors
	after := handlers.QueryInt(c, "after", &fe)
	f := models.LedgerFilter{TaskID: handlers.QueryInt(c, "task", &fe), GoalID: handlers.QueryInt(c, "goal", &fe)}
	if err := fe.Err(); err != nil {
		return err
	}
	v, err := p.ledgerView(c, after, f)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, ledgerpage.Page(v))
}

// ledgerVerify answers POST /ledger/verify: VerifyChain over every entry of the local
// ledger, the result shown on the first page of the ledger.
func (p *Pages) ledgerVerify(c echo.Context) error {
	v, err := p.ledgerView(c, 0, models.LedgerFilter{})
	if err != nil {
		return err
	}
	res := &ledgerpage.VerifyResult{}
	if v.Kind == "hcs" {
		res.Note = "This ledger is an HCS topic: its entries are verified against the topic's running hashes on the mirror node (HashScan), not here."
	} else {
		entries, err := ledger.ReadAll(c.Request().Context(), p.svc.Store())
		if err != nil {
			return err
		}
		res.Entries = len(entries)
		for _, e := range entries {
			if e.Status == models.LedgerPosted {
				res.Posted++
			}
		}
		var ce *ledger.ChainError
		switch err := ledger.VerifyChain(entries); {
		case err == nil:
			res.OK = true
			res.TipSeq, res.TipHash = ledger.ChainTip(entries)
		case errors.As(err, &ce):
			res.BadID, res.BadSeq, res.Problem, res.Detail = ce.EntryID, ce.Sequence, ce.Problem, ce.Detail
		default:
			return err
		}
	}
	v.Verify = res
	return render(c, http.StatusOK, ledgerpage.Page(v))
}

// ledgerEntry answers GET /ledger/:id: the entry with its exact message bytes (shown
// as text, escaped) and the full payload of a summarised entry.
func (p *Pages) ledgerEntry(c echo.Context) error {
	id, err := handlers.PathID(c, "id")
	if err != nil {
		return err
	}
	e, err := p.svc.Store().GetLedgerEntry(c.Request().Context(), id)
	if err != nil {
		return err
	}
	v := ledgerpage.EntryView{Meta: p.meta(c, "Ledger entry "+strconv.FormatInt(id, 10), layout.NavLedger), Kind: p.ledgerKind(),
		Row: p.ledgerRow(*e), CreatedAt: e.CreatedAt, Message: strings.ToValidUTF8(string(e.Message), "\uFFFD"),
		MessageSHA: ledger.SHA384Hex(e.Message), MessageBytes: len(e.Message)}
	if e.PostedAt != nil {
		v.PostedAt = *e.PostedAt
	}
	if len(e.Payload) > 0 {
		var buf bytes.Buffer
		if json.Indent(&buf, e.Payload, "", "  ") == nil {
			v.Payload = buf.String()
		} else {
			v.Payload = strings.ToValidUTF8(string(e.Payload), "\uFFFD")
		}
	}
	return render(c, http.StatusOK, ledgerpage.Entry(v))
}
