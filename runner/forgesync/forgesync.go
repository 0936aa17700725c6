// Package forgesync keeps each verified task's pull request on its forge (GitHub or
// GitLab, runner/forge) in step with the task: it pushes the verified commit with
// Countersign's own credentials, opens or updates the pull request with the evidence,
// sets the required countersign/verified status, and brings reviews and merges back
// as task actions.
//
// It is level-triggered: every round compares what each task says now (its commit,
// state, drift, standing ledger entry) with what was last told to the forge (the
// models.ForgePull row) and sends only the difference, so a missed wake-up, a crash or
// a second server costs a round, never a wrong status. Rounds run on every committed
// event (Store.Subscribe), every Interval, and at once after a webhook delivery.
// Reviews and merges arrive by webhook (Deliver) or, where no webhook can reach
// Countersign, by polling every PollEvery.
package forgesync

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/forge"
	"github.com/countersign/countersign/runner/startstop"
	"github.com/countersign/countersign/runner/workspace"
)

// Defaults for Config's zero values.
const (
	DefaultInterval  = 10 * time.Second
	DefaultPollEvery = time.Minute
	DefaultTimeout   = 30 * time.Second
)

// Pusher pushes a verified commit to a forge (the workspace manager).
type Pusher interface {
	PushToForge(ctx context.Context, p workspace.ForgePush) error
}

// Remover removes a task's worktree and branch once its work has landed.
type Remover interface {
	Remove(ctx context.Context, repo string, taskID int64, branch string) error
}

// Config is what a Syncer needs.
type Config struct {
	Service *models.Service
	Forges  *models.Forges
	// Workspaces pushes the verified commits and removes merged tasks' worktrees; a
	// server without the runner's workspaces cannot open pull requests (nil: the
	// sync only reads reviews and merges).
	Workspaces interface {
		Pusher
		Remover
	}
	// BaseURL is where people open the dashboard: the task links in statuses and
	// pull request descriptions.
	BaseURL string
	// Interval is the longest wait between rounds (DefaultInterval when zero).
	Interval time.Duration
	// PollEvery is how often open pull requests are read for reviews, merges and head
	// moves (DefaultPollEvery when zero; negative: never, webhooks only).
	PollEvery time.Duration
	// Timeout bounds one forge call (DefaultTimeout when zero).
	Timeout time.Duration
	// HTTPClient carries the forge API calls (a client with Timeout when nil).
	HTTPClient *http.Client
	Log        *slog.Logger
}

// Syncer is the background service keeping pull requests in step.
type Syncer struct {
	cfg   Config
	store models.ForgeStore
	wake  chan struct{}

	mu        sync.Mutex
	clients   map[int64]clientEntry
	lastPoll  time.Time
	lastPrune time.Time

	startstop.Base
}

type clientEntry struct {
	updated time.Time
	client  forge.Client
	login   string
}

// New returns a Syncer over cfg; Start starts it.
func New(cfg Config) (*Syncer, error) {
	if cfg.Service == nil || cfg.Forges == nil {
		return nil, errors.New("forgesync: no service")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.PollEvery == 0 {
		cfg.PollEvery = DefaultPollEvery
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: cfg.Timeout}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Syncer{cfg: cfg, store: cfg.Forges.Store(), wake: make(chan struct{}, 1), clients: map[int64]clientEntry{}}, nil
}

// Start runs rounds until Stop or until ctx ends. A Syncer starts once.
func (s *Syncer) Start(ctx context.Context) error {
	ctx, ok, started, stopped := s.StartInitOnce(ctx)
	if !ok {
		return errors.New("forgesync: already started")
	}
	events := s.store.Subscribe(ctx)
	go func() {
		defer stopped()
		started()
		t := time.NewTicker(s.cfg.Interval)
		defer t.Stop()
		for {
			s.Round(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-s.wake:
			case <-events:
			}
		}
	}()
	return nil
}

// Wake asks for a round now.
func (s *Syncer) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Round opens pull requests for newly verified tasks and brings every open one in
// step; failures are recorded on the pull request and retried next round.
func (s *Syncer) Round(ctx context.Context) {
	tasks, err := s.store.TasksWithoutPull(ctx, 50)
	if err != nil {
		s.cfg.Log.Warn("forge sync: listing tasks without a pull request failed", "err", err)
	}
	for i := range tasks {
		if ctx.Err() != nil {
			return
		}
		s.open(ctx, &tasks[i])
	}
	pulls, err := s.store.ListOpenForgePulls(ctx)
	if err != nil {
		s.cfg.Log.Warn("forge sync: listing open pull requests failed", "err", err)
		return
	}
	s.prune(ctx)
	poll := s.pollDue()
	for i := range pulls {
		if ctx.Err() != nil {
			return
		}
		s.syncPull(ctx, &pulls[i], poll)
	}
}

// pollDue says whether this round reads the forges for reviews and merges.
func (s *Syncer) pollDue() bool {
	if s.cfg.PollEvery < 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if now.Sub(s.lastPoll) < s.cfg.PollEvery {
		return false
	}
	s.lastPoll = now
	return true
}

// prune forgets old webhook delivery ids, at most once an hour.
func (s *Syncer) prune(ctx context.Context) {
	s.mu.Lock()
	due := time.Since(s.lastPrune) >= time.Hour
	if due {
		s.lastPrune = time.Now()
	}
	s.mu.Unlock()
	if !due {
		return
	}
	if err := s.store.PruneForgeDeliveries(ctx, s.cfg.Forges.Now().Add(-models.ForgeDeliveryMemory)); err != nil {
		s.cfg.Log.Warn("forge sync: pruning old webhook deliveries failed", "err", err)
	}
}

// client returns the forge's client and the login its token acts as, made once per
// version of the forge's settings.
func (s *Syncer) client(ctx context.Context, f *models.Forge) (forge.Client, string, error) {
	s.mu.Lock()
	e, ok := s.clients[f.ID]
	s.mu.Unlock()
	if ok && e.updated.Equal(f.UpdatedAt) {
		return e.client, e.login, nil
	}
	c, err := NewClient(f, s.cfg.HTTPClient)
	if err != nil {
		return nil, "", err
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	login, err := c.Login(cctx)
	if err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	s.clients[f.ID] = clientEntry{updated: f.UpdatedAt, client: c, login: login}
	s.mu.Unlock()
	return c, login, nil
}

// NewClient returns the forge client f's settings describe, its calls carried by hc.
func NewClient(f *models.Forge, hc *http.Client) (forge.Client, error) {
	cfg := forge.Config{Kind: forge.Kind(f.Kind), BaseURL: f.BaseURL, Repo: f.Repo, Token: f.Token, HTTPClient: hc}
	switch f.Kind {
	case models.ForgeGitHub:
		return forge.NewGitHub(cfg)
	case models.ForgeGitLab:
		return forge.NewGitLab(cfg)
	}
	return nil, models.Errorf(models.EINVALID, "forge %s: unknown kind %q", f.Name, f.Kind)
}

// inTx runs fn in a transaction of the forge store.
func (s *Syncer) inTx(ctx context.Context, fn func(tx models.ForgeTx) error) error {
	return s.store.InTx(ctx, func(t models.Tx) error {
		tx, ok := t.(models.ForgeTx)
		if !ok {
			return models.Errorf(models.EINTERNAL, "this store keeps no forges")
		}
		return fn(tx)
	})
}

// call bounds one forge call by the configured timeout.
func (s *Syncer) call(ctx context.Context, fn func(ctx context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	return fn(cctx)
}
