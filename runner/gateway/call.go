package gateway

import (
	"context"
	"errors"
	"sync"

	"github.com/countersign/countersign/models"
)

// call is one request through the gateway: what it reserved and how it is settled.
// A streamed call is admitted on the transport's goroutine while the handler's may
// already settle it (an upstream that answers before the body ends), so the fields
// below mu are only read and written under it.
type call struct {
	gw    *Gateway
	lease *Lease
	route route

	mu       sync.Mutex
	admitted bool  // the gateway accepted the body: the upstream may get all of it
	refused  error // why the gateway refused the call while its body arrived
	settled  bool
	model    string
	price    models.ModelPrice
	priced   bool
	worst    float64 // the reservation's worth: charged when the usage never arrives
	held     float64 // what is held in the caps' pools (worst, or 0 uncapped)
}

type callKey struct{}

// callOf is the call a proxied request belongs to.
func callOf(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

// errRevoked refuses a call whose credential died while its body arrived.
var errRevoked = errors.New("the credential died during the call")

// errCallOver refuses to admit a call its handler has already settled.
var errCallOver = errors.New("the call ended before its request did")

// admit records the call's reservation once its body is accepted; a call already
// settled is not admitted, and the caller gives its hold back.
func (c *call) admit(model string, price models.ModelPrice, priced bool, worst, held float64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.settled {
		return errCallOver
	}
	c.admitted = true
	c.model, c.price, c.priced, c.worst, c.held = model, price, priced, worst, held
	return nil
}

// refuse records why the gateway refused the call before the upstream had it whole.
func (c *call) refuse(err error) {
	c.mu.Lock()
	c.refused = err
	c.mu.Unlock()
}

// refusal is why the gateway refused c while its body arrived, nil if it did not
// (or c is nil).
func (c *call) refusal() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refused
}

// settle ends the call once: charged is false for a call the provider did not bill
// (an error status, no response); otherwise the call costs its tokens when final,
// its reservation when not (a cut stream: the worst case, since the provider bills
// what it generated whether or not the client read it). A call never admitted
// costs nothing: the upstream never had its whole request.
func (c *call) settle(t Tokens, final, charged bool) {
	c.mu.Lock()
	if c.settled {
		c.mu.Unlock()
		return
	}
	c.settled = true
	charged = charged && c.admitted
	metered, model, price, priced, worst, held := c.route.kind.metered(), c.model, c.price, c.priced, c.worst, c.held
	c.mu.Unlock()
	if !metered {
		return
	}
	cost := 0.0
	switch {
	case !charged:
	case final && priced:
		cost = t.cost(price)
	case !final:
		cost = worst
	}
	c.gw.ledger.settle(c.lease.pools, held, cost)
	if charged {
		c.lease.mu.Lock()
		c.lease.m.record(model, t, cost, priced, !final)
		c.lease.mu.Unlock()
	}
}
