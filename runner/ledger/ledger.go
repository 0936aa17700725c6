// Package ledger posts Countersign's ledger entries — task.complete, task.blocked,
// goal.verified — to a tamper-evident ledger: a Hedera Consensus Service topic (HCS)
// in production, a local SHA-384 hash chain kept in the database rows by default.
//
// # Outbox and order
//
// The service writes each entry into the ledger_entries table in the same database
// transaction as the state change it records (the outbox). A single Publisher posts
// pending entries strictly in ID order and writes the receipt (sequence number,
// running hash, consensus time, transaction id) back into the row, in ID order too.
// To a ledger that is a Pipeline (HCS) it keeps up to Options.Depth transactions in
// flight: each is prepared and saved, then sent once the one before it is taken in
// order, and their receipts are read concurrently; an entry is recorded only after
// every entry before it is.
//
// # Exactly once
//
// A Ledger is driven by this protocol, which makes posting exactly-once even across
// crashes, lost replies and process takeovers:
//
//  1. Prepare (entry has no TxID): HCS freezes one TopicMessageSubmitTransaction with
//     an explicit transaction id (operator account + valid start), pinned node
//     account ids and id regeneration off, signs it once, and sets e.TxID and
//     e.TxBytes. The publisher SAVES the entry before anything is sent, so every
//     process that ever sends the entry sends these exact bytes.
//  2. Submit sends the stored bytes. The network never executes one transaction id
//     twice (a repeat is DUPLICATE_TRANSACTION), so sending again is always safe.
//  3. Any error or unknown outcome is resolved with Lookup: the receipt of the SAME
//     transaction id. Found: the entry is posted, with that receipt.
//  4. Lookup answers "not found" (found=false, err=nil) only when the transaction can
//     no longer reach consensus (its validity window has passed) and no record of it
//     exists. Only then does the publisher clear TxID/TxBytes, record why in
//     LastError, and prepare a new transaction. While the outcome is undecidable,
//     Lookup returns an error and the publisher retries later.
//
// Pipelined, Submit is split in two: Send (hand the prepared bytes over, in order)
// and Await (the receipt). An error from either is resolved with Lookup exactly as an
// error from Submit, and nothing after the failed entry is recorded until it is
// resolved: later entries already sent keep their prepared transactions and are
// resolved by the same transaction ids on the next pass.
//
// The local ledger follows the same protocol trivially: Prepare is a no-op, and its
// "consensus" is the row update the publisher makes, so an unrecorded Submit left no
// trace and simply runs again.
package ledger

import (
	"context"
	"errors"
	"time"

	"github.com/countersign/countersign/models"
)

// Receipt is what a ledger reports for a posted entry.
type Receipt struct {
	Sequence    int64     // position in the topic / chain, from 1, without gaps
	RunningHash []byte    // 48 bytes: SHA-384 running hash after this message
	ConsensusAt time.Time // consensus time (HCS: see HCS.Lookup for its precision)
	TxID        string    // transaction id; "" for the local ledger
}

// Ledger is one backend. Implementations are used by one publisher at a time; see the
// package documentation for the protocol that makes posting exactly once.
type Ledger interface {
	// Name is "local" or "hcs".
	Name() string
	// Prepare readies e for sending when e.TxID is empty: HCS freezes and signs one
	// transaction and sets e.TxID and e.TxBytes; local does nothing. The caller saves
	// e before calling Submit.
	Prepare(ctx context.Context, e *models.LedgerEntry) error
	// Submit posts e.Message (for HCS, exactly the prepared bytes) and returns the
	// receipt. An error means the outcome may be unknown: call Lookup. An error for
	// which IsPermanent is true can never succeed.
	Submit(ctx context.Context, e *models.LedgerEntry) (Receipt, error)
	// Lookup resolves an unknown outcome by the same transaction id: (receipt, true,
	// nil) when e is on the ledger; (_, false, nil) only when e is not on the ledger
	// and can no longer get there (so a new transaction may be prepared); an error
	// when that cannot be decided yet.
	Lookup(ctx context.Context, e *models.LedgerEntry) (Receipt, bool, error)
}

// Pipeline is a Ledger that can keep several transactions in flight and still put
// them on the ledger in the order they were sent. The publisher calls Send one entry
// at a time in ID order, and Await for entries Send took, concurrently.
type Pipeline interface {
	Ledger
	// Send hands e's prepared transaction over and returns once it is taken in order:
	// nothing sent after it can reach the ledger before it. An error means e's
	// outcome is not settled (call Lookup) and nothing may be sent after it.
	Send(ctx context.Context, e *models.LedgerEntry) error
	// Await returns the receipt of an entry Send took. An error means the outcome is
	// not settled: call Lookup.
	Await(ctx context.Context, e *models.LedgerEntry) (Receipt, error)
}

// ErrOutcomeUnknown is wrapped by errors for which nobody can tell yet whether the
// transaction reached consensus.
var ErrOutcomeUnknown = errors.New("ledger: outcome unknown")

// permanentError marks an error that retrying can never fix.
type permanentError struct{ err error }

func (p permanentError) Error() string { return p.err.Error() }
func (p permanentError) Unwrap() error { return p.err }

// Permanent wraps err so that IsPermanent reports true: the publisher then marks the
// entry failed instead of retrying it forever.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent reports whether err (or anything it wraps) was marked by Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}
