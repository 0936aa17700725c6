package models

import "context"

// eventWaitKey is the context key of WithoutEventWait.
type eventWaitKey struct{}

// WithoutEventWait returns a context under which a store's InTx returns as soon as its
// transaction commits, without waiting until readers can see the events it appended
// (on PostgreSQL, event ids are handed out before commit, so a commit can land before
// an older id's): for hot paths that never read their own events back, such as the
// runner's claims and settles. The events are announced to subscribers all the same,
// once they are readable, and in id order.
func WithoutEventWait(ctx context.Context) context.Context {
	return context.WithValue(ctx, eventWaitKey{}, true)
}

// SkipsEventWait reports whether ctx came from WithoutEventWait.
func SkipsEventWait(ctx context.Context) bool {
	return ctx.Value(eventWaitKey{}) != nil
}
