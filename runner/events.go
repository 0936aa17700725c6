package runner

import (
	"context"
	"sync"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/startstop"
)

// publisher is the pool's side of the event stream: it remembers the events the pool
// appends itself (inTx), and from Start until Stop follows the store's wake-ups and
// passes on to the claim loop those that cover someone else's events. The pool's own
// events wake no claim: none of them makes work claimable that the pool's own
// wake-up (a task goroutine ending frees its slot and follows any task its outcome
// released) does not already cover.
type publisher struct {
	startstop.Base
	store models.Store
	// foreign receives a value when a wake-up covered another writer's event; it
	// holds one pending value (one claim covers any number of them). The claim loop
	// follows it only when the store has no work-ready wake-ups (claim_loop.go).
	foreign chan struct{}
	// forget drops what the pool cached of what such an event may have changed (the
	// project rules).
	forget func()

	evMu sync.Mutex
	own  map[int64]bool // ids of events this pool appended that no wake-up has covered yet
	seen int64          // the newest event id a wake-up covered
}

func newPublisher(store models.Store, forget func()) *publisher {
	return &publisher{store: store, foreign: make(chan struct{}, 1), forget: forget, own: map[int64]bool{}}
}

// Start follows the store's wake-ups until Stop or until ctx ends.
func (p *publisher) Start(ctx context.Context) error {
	ctx, ok, started, stopped := p.StartInit(ctx)
	if !ok {
		return nil
	}
	events := p.store.Subscribe(ctx)
	go func() {
		defer stopped()
		started()
		p.follow(ctx, events)
	}()
	return nil
}

// follow passes on the wake-ups of events that are not all the pool's own. When the
// store closes the stream, polling still works; the pool then stops remembering.
func (p *publisher) follow(ctx context.Context, events <-chan int64) {
	for {
		select {
		case <-ctx.Done():
			return
		case id, ok := <-events:
			if !ok {
				p.evMu.Lock()
				p.own = nil
				p.evMu.Unlock()
				return
			}
			if p.onlyOwn(id) {
				continue
			}
			p.forget()
			select {
			case p.foreign <- struct{}{}:
			default:
			}
		}
	}
}

// maxOwnEvents bounds the ids remembered by ownEvents; forgetting them only costs
// claims that find nothing.
const maxOwnEvents = 4096

// onlyOwn reports whether every event up to id that no earlier wake-up covered was
// appended by this pool. Ids are committed in order, so a wake-up for id covers every
// event up to it; a gap (another writer's event, a rolled-back id) counts as foreign.
func (p *publisher) onlyOwn(id int64) bool {
	p.evMu.Lock()
	defer p.evMu.Unlock()
	if p.own == nil {
		return false
	}
	only := id <= p.seen || int(id-p.seen) <= len(p.own)
	for i := p.seen + 1; only && i <= id; i++ {
		only = p.own[i]
	}
	for k := range p.own {
		if k <= id {
			delete(p.own, k)
		}
	}
	p.seen = max(p.seen, id)
	return only
}

// ownEvents remembers (add) or forgets (a transaction that did not commit) ids of
// events this pool appended.
func (p *publisher) ownEvents(ids []int64, add bool) {
	if len(ids) == 0 {
		return
	}
	p.evMu.Lock()
	defer p.evMu.Unlock()
	if p.own == nil {
		return
	}
	if add && len(p.own)+len(ids) > maxOwnEvents {
		clear(p.own)
	}
	for _, id := range ids {
		if add {
			p.own[id] = true
		} else {
			delete(p.own, id)
		}
	}
}

// inTx runs fn in a transaction of the store whose Tx remembers the events it
// appends as this pool's (see loop). They are remembered before the commit, so that
// the wake-up the commit causes finds them, and forgotten when fn fails, before the
// rollback: an id that never commits may be handed out again to someone else.
// The pool never reads its own events back, so its commits do not wait until readers
// can see them (models.WithoutEventWait): on PostgreSQL that wait is a query or more
// per transaction, on the claim and settle paths.
func (p *publisher) inTx(ctx context.Context, fn func(tx models.Tx) error) error {
	var ids []int64
	err := p.store.InTx(models.WithoutEventWait(ctx), func(tx models.Tx) (err error) {
		ids = ids[:0]
		ok := false
		defer func() {
			if !ok {
				p.ownEvents(ids, false)
			}
		}()
		err = fn(ownTx{Tx: tx, p: p, ids: &ids})
		ok = err == nil
		return err
	})
	if err != nil {
		p.ownEvents(ids, false)
	}
	return err
}

// ownTx is a Tx whose appended events are remembered as the pool's.
type ownTx struct {
	models.Tx
	p   *publisher
	ids *[]int64
}

func (o ownTx) AppendEvent(ctx context.Context, e *models.Event) error {
	return o.AppendEvents(ctx, []*models.Event{e})
}

func (o ownTx) AppendEvents(ctx context.Context, es []*models.Event) error {
	if err := o.Tx.AppendEvents(ctx, es); err != nil {
		return err
	}
	// The store gives events their ids just before the commit.
	o.Tx.BeforeCommit(func() {
		ids := make([]int64, len(es))
		for i, e := range es {
			ids[i] = e.ID
		}
		*o.ids = append(*o.ids, ids...)
		o.p.ownEvents(ids, true)
	})
	return nil
}

// unwrapTx returns the store's own Tx behind tx.
func unwrapTx(tx models.Tx) models.Tx {
	if o, ok := tx.(ownTx); ok {
		return o.Tx
	}
	return tx
}
