// Package watch makes sure nothing waits unseen: every interval it sweeps the inbox
// (models.InboxService.SweepInbox) — items past their kind's deadline are announced again
// and escalated to the lead, and a question unanswered for twice its deadline blocks
// its task.
package watch

import (
	"context"
	"log/slog"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/internal/loop"
)

// DefaultEvery is how often the inbox is swept unless told otherwise.
const DefaultEvery = time.Minute

// InboxSweeper is what the Watcher needs of the inbox aggregate (models.InboxService).
type InboxSweeper interface {
	SweepInbox(ctx context.Context, now time.Time, d models.Deadlines) (models.SweepResult, error)
}

// Watcher sweeps the inbox periodically between Start and Stop.
type Watcher struct {
	inbox     InboxSweeper
	deadlines models.Deadlines
	every     time.Duration
	log       *slog.Logger
	loop      loop.Loop
}

// New returns a Watcher sweeping every every (DefaultEvery when not positive) with
// deadlines; log receives what it did (nil: discarded).
func New(inbox InboxSweeper, deadlines models.Deadlines, every time.Duration, log *slog.Logger) *Watcher {
	if every <= 0 {
		every = DefaultEvery
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Watcher{inbox: inbox, deadlines: deadlines, every: every, log: log}
}

// Start begins sweeping, at once and then every interval, until Stop or ctx ends.
func (w *Watcher) Start(ctx context.Context) error { return w.loop.Start(ctx, w.every, true, w.sweep) }

// Stop ends the sweeping and waits for the sweep under way (or ctx); calling it
// again, or without Start, does nothing.
func (w *Watcher) Stop(ctx context.Context) error { return w.loop.Stop(ctx) }

func (w *Watcher) sweep(ctx context.Context) {
	res, err := w.inbox.SweepInbox(ctx, time.Now().UTC(), w.deadlines)
	switch {
	case err != nil && ctx.Err() == nil:
		w.log.Warn("sweeping the inbox failed", "err", err)
	case res.Escalated > 0 || res.Expired > 0:
		w.log.Info("inbox swept", "escalated", res.Escalated, "questions_expired", res.Expired)
	}
}
