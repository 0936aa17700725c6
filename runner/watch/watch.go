// Package watch makes sure nothing waits unseen: every interval it sweeps the inbox
// (models.Service.SweepInbox) — items past their kind's deadline are announced again
// and escalated to the lead, and a question unanswered for twice its deadline blocks
// its task.
package watch

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/countersign/countersign/models"
)

// DefaultEvery is how often the inbox is swept unless told otherwise.
const DefaultEvery = time.Minute

// Watcher sweeps the inbox periodically between Start and Stop.
type Watcher struct {
	svc       *models.Service
	deadlines models.Deadlines
	every     time.Duration
	log       *slog.Logger

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a Watcher sweeping every every (DefaultEvery when not positive) with
// deadlines; log receives what it did (nil: discarded).
func New(svc *models.Service, deadlines models.Deadlines, every time.Duration, log *slog.Logger) *Watcher {
	if every <= 0 {
		every = DefaultEvery
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Watcher{svc: svc, deadlines: deadlines, every: every, log: log}
}

// Start begins sweeping, at once and then every interval, until Stop or ctx ends.
func (w *Watcher) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel != nil {
		return errors.New("watch: already started")
	}
	ctx, w.cancel = context.WithCancel(ctx)
	w.done = make(chan struct{})
	go w.loop(ctx, w.done)
	return nil
}

func (w *Watcher) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		res, err := w.svc.SweepInbox(ctx, time.Now().UTC(), w.deadlines)
		switch {
		case err != nil && ctx.Err() == nil:
			w.log.Warn("sweeping the inbox failed", "err", err)
		case res.Escalated > 0 || res.Expired > 0:
			w.log.Info("inbox swept", "escalated", res.Escalated, "questions_expired", res.Expired)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Stop ends the sweeping and waits for the sweep under way (or ctx); calling it
// again, or without Start, does nothing.
func (w *Watcher) Stop(ctx context.Context) error {
	w.mu.Lock()
	cancel, done := w.cancel, w.done
	w.cancel = nil
	w.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
