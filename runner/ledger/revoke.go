package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/countersign/countersign/models"
)

// EntryGetter reads one ledger entry (models.Store is one).
type EntryGetter interface {
	GetLedgerEntry(ctx context.Context, id int64) (*models.LedgerEntry, error)
}

// ErrRevokedInFlight says the entry a revocation withdraws is not recorded yet.
var ErrRevokedInFlight = errors.New("ledger: the entry this revocation withdraws is not posted yet")

// FillRevokes writes into a revocation's message the ledger sequence of the entry it
// withdraws, when the message does not carry it yet and that entry is posted; it
// reports whether e changed (the caller saves it). It must run before e is prepared:
// a prepared transaction's bytes are final. A revocation always comes after what it
// withdraws, so that entry is posted by then — or failed for good, in which case
// nothing on the ledger is withdrawn and "revokes" stays out (the payload still names
// the entry) — unless a pipelining publisher still has it in flight: then
// ErrRevokedInFlight says to try again once it is recorded.
func FillRevokes(ctx context.Context, store EntryGetter, e *models.LedgerEntry) (bool, error) {
	if e.RevokesID == nil || e.TxID != "" {
		return false, nil
	}
	m, err := ParseMessage(e.Message)
	if err != nil {
		return false, err
	}
	if m.Revokes != 0 {
		return false, nil
	}
	revoked, err := store.GetLedgerEntry(ctx, *e.RevokesID)
	if err != nil {
		return false, fmt.Errorf("ledger: entry %d revokes entry %d: %w", e.ID, *e.RevokesID, err)
	}
	if revoked.Status == models.LedgerPending {
		return false, ErrRevokedInFlight
	}
	if revoked.Status != models.LedgerPosted || revoked.Sequence == 0 {
		return false, nil
	}
	m.Revokes = revoked.Sequence
	b, err := m.Encode()
	if err != nil {
		return false, err
	}
	e.Message = b
	return true, nil
}
