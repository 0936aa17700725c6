package main

import (
	"context"
	"flag"
	"log/slog"
	"time"

	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/runner/notify"
)

// webhookConfig is how serve delivers webhook notifications (runner/notify).
type webhookConfig struct {
	Off       bool
	PublicURL string // where people open the pages: the links in notifications
	Workers   int
	Timeout   time.Duration
	// Forge is how pull requests on GitHub and GitLab are kept in step (forgesync.go).
	Forge forgeSyncConfig
}

// webhookFlags registers serve's webhook flags.
func webhookFlags(fs *flag.FlagSet, w *webhookConfig) error {
	off, err := envBool("COUNTERSIGN_WEBHOOKS_OFF", false)
	if err != nil {
		return err
	}
	timeout, err := envDuration("COUNTERSIGN_WEBHOOK_TIMEOUT", 10*time.Second)
	if err != nil {
		return err
	}
	fs.BoolVar(&w.Off, "webhooks-off", off, "do not deliver webhook notifications from this process; they wait in the outbox for another one (env COUNTERSIGN_WEBHOOKS_OFF)")
	fs.StringVar(&w.PublicURL, "public-url", envOr("", "COUNTERSIGN_PUBLIC_URL"), "URL people open the dashboard at, for the links in webhook notifications; default -url (env COUNTERSIGN_PUBLIC_URL)")
	fs.IntVar(&w.Workers, "webhook-workers", 4, "webhook deliveries in flight at once")
	fs.DurationVar(&w.Timeout, "webhook-timeout", timeout, "limit on one webhook delivery: connect, send, answer (env COUNTERSIGN_WEBHOOK_TIMEOUT)")
	return nil
}

// startWebhooks starts the webhook dispatcher unless w turns it off; the function
// returned stops it. selfURL is the server's own URL, the links' default base.
func startWebhooks(ctx context.Context, w *webhookConfig, db *store.DB, selfURL string, log *slog.Logger) (func(context.Context) error, error) {
	if w.Off {
		return func(context.Context) error { return nil }, nil
	}
	base := w.PublicURL
	if base == "" {
		base = selfURL
	}
	d, err := notify.New(notify.Config{Store: db, BaseURL: base, Workers: w.Workers, Timeout: w.Timeout, Log: log})
	if err != nil {
		return nil, err
	}
	if err := d.Start(ctx); err != nil {
		return nil, err
	}
	return d.Stop, nil
}
