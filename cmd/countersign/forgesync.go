package main

import (
	"context"
	"flag"
	"log/slog"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/forgesync"
)

// forgeSyncConfig is how serve keeps pull requests on the forges in step.
type forgeSyncConfig struct {
	Off       bool
	Interval  time.Duration
	PollEvery time.Duration
}

// forgeSyncFlags registers serve's forge flags.
func forgeSyncFlags(fs *flag.FlagSet, f *forgeSyncConfig) error {
	off, err := envBool("COUNTERSIGN_FORGE_SYNC_OFF", false)
	if err != nil {
		return err
	}
	poll, err := envDuration("COUNTERSIGN_FORGE_POLL", forgesync.DefaultPollEvery)
	if err != nil {
		return err
	}
	interval, err := envDuration("COUNTERSIGN_FORGE_INTERVAL", forgesync.DefaultInterval)
	if err != nil {
		return err
	}
	fs.BoolVar(&f.Off, "forge-sync-off", off, "do not open pull requests or set statuses on forges from this process (env COUNTERSIGN_FORGE_SYNC_OFF)")
	fs.DurationVar(&f.PollEvery, "forge-poll", poll, "how often open pull requests are read for reviews and merges; negative: webhooks only (env COUNTERSIGN_FORGE_POLL)")
	fs.DurationVar(&f.Interval, "forge-interval", interval, "longest wait between forge sync rounds (env COUNTERSIGN_FORGE_INTERVAL)")
	return nil
}

// startForgeSync starts the forge sync over svc, pushing from ws (nil: a server
// without the runner's workspaces, which only reads reviews and merges). It returns
// the syncer (nil when off) and the function that stops it.
func startForgeSync(ctx context.Context, f *forgeSyncConfig, svc *models.Service, ws forgeWorkspaces, baseURL string, log *slog.Logger) (*forgesync.Syncer, func(context.Context) error, error) {
	none := func(context.Context) error { return nil }
	if f.Off {
		return nil, none, nil
	}
	forges, err := models.NewForges(svc)
	if err != nil {
		return nil, nil, err
	}
	cfg := forgesync.Config{Service: svc, Forges: forges, BaseURL: baseURL, Interval: f.Interval, PollEvery: f.PollEvery, Log: log}
	if ws != nil {
		cfg.Workspaces = ws
	}
	s, err := forgesync.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := s.Start(ctx); err != nil {
		return nil, nil, err
	}
	return s, s.Stop, nil
}

// forgeWorkspaces is what the forge sync needs of the runner's workspace manager.
type forgeWorkspaces interface {
	forgesync.Pusher
	forgesync.Remover
}
