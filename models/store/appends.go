package store

import (
	"context"

	"github.com/countersign/countersign/models"
)

// appends are the events and ledger entries a transaction appended, held until just
// before it commits.
//
// On PostgreSQL every insert into ledger_entries first takes one transaction-scoped
// lock, held to commit (migration 0003), so that entries are committed in id order
// and the hash chain's reader never skips one. Writing the appends last holds that
// lock for the inserts and the commit alone, and makes it the last lock a transaction
// takes, so no lock order can deadlock with it. Only transactions that verify a task
// write ledger entries. Events take no lock (migration 0027): readers stop at the
// event horizon instead (see ListEvents), which relies on the ids being drawn last.
type appends struct {
	events []*models.Event
	ledger []*models.LedgerEntry
	// beforeCommit run after the appends are written (their ids are set) and before
	// the commit.
	beforeCommit []func()
}

// BeforeCommit registers fn to run when the transaction's appends have been written
// (events and ledger entries have their ids) and before it commits; fn must not use
// the transaction. Outside a transaction it runs fn at once.
func (o *ops) BeforeCommit(fn func()) {
	if o.tx == nil {
		fn()
		return
	}
	o.tx.beforeCommit = append(o.tx.beforeCommit, fn)
}

// flushAppends writes what the transaction appended, one statement per table, and
// runs the BeforeCommit functions.
func (o *ops) flushAppends(ctx context.Context) error {
	a := &o.tx.appends
	hooks, err := o.planOutbox(ctx, a.events) // webhooks.go: read before the append lock
	if err != nil {
		return err
	}
	if len(a.events) > 0 {
		if err := o.insertEvents(ctx, a.events); err != nil {
			return err
		}
	}
	if err := o.writeOutbox(ctx, hooks); err != nil {
		return err
	}
	if len(a.ledger) > 0 {
		if err := o.insertLedgerEntries(ctx, a.ledger); err != nil {
			return err
		}
	}
	for _, fn := range a.beforeCommit {
		fn()
	}
	*a = appends{}
	return nil
}
