package ledger

import (
	"context"
	"fmt"
	"sync"

	"github.com/countersign/countersign/models"
)

// flight is one entry on its way to a Pipeline: prepared and saved, sent, and then
// settled by its receipt, or stopped at the stage that failed.
type flight struct {
	e     models.LedgerEntry
	done  chan struct{} // closed once r or err is set
	r     Receipt
	stage string // the stage that failed, when err is set
	err   error
}

func newFlight(e models.LedgerEntry) *flight {
	return &flight{e: e, done: make(chan struct{})}
}

// fail settles f as failed at stage.
func (f *flight) fail(stage string, err error) *flight {
	f.stage, f.err = stage, err
	close(f.done)
	return f
}

// postPipelined posts pending entries with up to Depth in flight: a sender prepares,
// saves and sends them one by one in ID order, each Await runs on its own, and the
// recorder records them in ID order. It returns when nothing is pending, or at the
// first entry that is not settled (after resolving it with Lookup): nothing after
// that entry is recorded in this pass; the entries already sent after it keep their
// saved transactions, which the next pass sends again (the network takes a
// transaction id once) and resolves by the same ids.
func (p *Publisher) postPipelined(ctx context.Context, pl Pipeline) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	flights := make(chan *flight, p.opts.Depth)
	slots := make(chan struct{}, p.opts.Depth) // one per entry sent and not yet recorded
	go p.sendAll(ctx, pl, flights, slots, &wg)
	n, err := p.recordAll(ctx, flights, slots)
	cancel()
	for range flights { // let the sender finish; what it sent is resolved next pass
	}
	wg.Wait()
	return n, err
}

// sendAll feeds flights in ID order, waiting for a free slot before each entry, and
// stops after the first entry it could not send or when nothing is pending.
func (p *Publisher) sendAll(ctx context.Context, pl Pipeline, flights chan<- *flight, slots chan struct{}, wg *sync.WaitGroup) {
	defer close(flights)
	var after int64
	for {
		rows, err := p.store.ListLedger(ctx, models.LedgerFilter{Status: models.LedgerPending, AfterID: after, Limit: p.opts.Depth})
		if err != nil {
			f := newFlight(models.LedgerEntry{}).fail(stageList, fmt.Errorf("ledger publisher: list pending: %w", err))
			select {
			case flights <- f:
			case <-ctx.Done():
			}
			return
		}
		if len(rows) == 0 {
			return
		}
		for _, e := range rows {
			after = e.ID
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			f, sent := p.launch(ctx, pl, e, wg)
			select {
			case flights <- f:
			case <-ctx.Done():
				return
			}
			if !sent {
				return // nothing may overtake an entry whose outcome is not settled
			}
		}
	}
}

// launch prepares and saves e if needed, sends it, and starts awaiting its receipt.
// sent is false when it stopped before the entry was taken in order.
func (p *Publisher) launch(ctx context.Context, pl Pipeline, e models.LedgerEntry, wg *sync.WaitGroup) (f *flight, sent bool) {
	f = newFlight(e)
	if stage, err := p.prepare(ctx, &f.e); err != nil {
		return f.fail(stage, err), false
	}
	if err := pl.Send(ctx, &f.e); err != nil {
		return f.fail(stageSend, err), false
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		r, err := pl.Await(ctx, &f.e)
		if err != nil {
			f.fail(stageAwait, err)
			return
		}
		f.r = r
		close(f.done)
	}()
	return f, true
}

// recordAll records flights in order as they settle and stops at the first that
// failed, after resolving it.
func (p *Publisher) recordAll(ctx context.Context, flights <-chan *flight, slots <-chan struct{}) (int, error) {
	n := 0
	for f := range flights {
		select {
		case <-f.done:
		case <-ctx.Done():
			return n, ctx.Err()
		}
		if f.err != nil {
			posted, err := p.resolve(ctx, &f.e, f.stage, f.err)
			if posted {
				n++
			}
			return n, err
		}
		if err := p.recordPosted(ctx, &f.e, f.r); err != nil {
			return n, err
		}
		n++
		<-slots
	}
	return n, nil
}
