package models

import "context"

// EventBuffer is a Tx that holds the events appended through it until Flush, which
// stores them with one AppendEvents call, in the order they were appended. A state
// change appends several events (a runner's claim: assign, start, attempt.started;
// a pass: attempt.finished, submit, approve, verify); on PostgreSQL each append is a
// round trip, so they are stored together; and an EventBuffer that is never flushed
// drops what it held, which is how a claim leaves nothing behind of a task it could not
// claim.
//
// Held events have no ID until the transaction commits (see Tx.AppendEvent); whoever
// buffers flushes before it does. Every other method goes straight to the Tx
// underneath.
type EventBuffer struct {
	Tx
	held []*Event
}

// BufferEvents returns an EventBuffer over tx.
func BufferEvents(tx Tx) *EventBuffer { return &EventBuffer{Tx: tx} }

// AppendEvent holds e until Flush.
func (b *EventBuffer) AppendEvent(_ context.Context, e *Event) error {
	b.held = append(b.held, e)
	return nil
}

// AppendEvents holds es until Flush.
func (b *EventBuffer) AppendEvents(_ context.Context, es []*Event) error {
	b.held = append(b.held, es...)
	return nil
}

// Flush passes the held events to the Tx underneath, which sets their IDs when it
// commits.
func (b *EventBuffer) Flush(ctx context.Context) error {
	if len(b.held) == 0 {
		return nil
	}
	held := b.held
	b.held = nil
	return b.Tx.AppendEvents(ctx, held)
}
