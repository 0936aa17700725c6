package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/startstop"
)

// Store is what the dispatcher needs of the database (the gorm store has it).
type Store interface {
	// ClaimWebhookDeliveries takes up to limit due deliveries of enabled endpoints,
	// counts the attempt and leases them until at+lease.
	ClaimWebhookDeliveries(ctx context.Context, at time.Time, lease time.Duration, limit int) ([]models.HookJob, error)
	// RecordWebhookAttempt logs an attempt and saves the delivery as settled, unless
	// it was claimed or redelivered since claimedUntil; disable, when set, disables
	// the endpoint with that reason.
	RecordWebhookAttempt(ctx context.Context, d *models.WebhookDelivery, claimedUntil time.Time, a *models.WebhookAttempt, disable string) error
	// PruneWebhookDeliveries deletes deliveries finished before before.
	PruneWebhookDeliveries(ctx context.Context, before time.Time) (int64, error)
	// Subscribe wakes the dispatcher when events commit (the outbox rows commit with them).
	Subscribe(ctx context.Context) <-chan int64
}

// Config configures a Dispatcher. Zero fields take the defaults.
type Config struct {
	Store Store
	// BaseURL is where people open Countersign's pages (the links in the bodies).
	BaseURL string
	// Workers is how many deliveries are in flight at once (4).
	Workers int
	// Timeout bounds one attempt: connecting, sending and the answer (10s).
	Timeout time.Duration
	// Poll is how often due deliveries are looked for without a wake-up: retries
	// fall due with no event to announce them (1s).
	Poll time.Duration
	// Retry is when failed deliveries are tried again (models.DefaultRetryPolicy).
	Retry models.RetryPolicy
	// Keep is how long finished deliveries stay in the log (7 days).
	Keep time.Duration
	// Client sends the requests; nil builds one that never follows redirects.
	Client *http.Client
	Log    *slog.Logger
}

// maxAnswer bounds what is read of an answer's body: enough to show why it failed
// and to reuse the connection, never a flood.
const maxAnswer = 4 << 10

// Dispatcher sends due deliveries from goroutines of its own.
type Dispatcher struct {
	cfg    Config
	client *http.Client
	freed  chan struct{}
	sem    chan struct{}
	// The base's context and stopped channel are the claim loop's; kill cancels the
	// attempts in flight, which outlive the loop until Stop's ctx ends.
	startstop.Base
	kill     context.CancelFunc
	inflight sync.WaitGroup
}

// New returns a dispatcher over cfg; Start starts it.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.Store == nil {
		return nil, errors.New("notify: no store")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Retry == (models.RetryPolicy{}) {
		cfg.Retry = models.DefaultRetryPolicy
	}
	if cfg.Keep <= 0 {
		cfg.Keep = 7 * 24 * time.Hour
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	client := cfg.Client
	if client == nil {
		client = NewClient(cfg.Timeout)
	}
	return &Dispatcher{cfg: cfg, client: client, freed: make(chan struct{}, 1), sem: make(chan struct{}, cfg.Workers)}, nil
}

// NewClient returns the HTTP client deliveries use: it never follows a redirect (a
// 3xx is an answer that failed), connects within timeout and keeps a few idle
// connections per endpoint.
func NewClient(timeout time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = timeout
	tr.ResponseHeaderTimeout = timeout
	tr.MaxIdleConnsPerHost = 4
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Start claims and sends deliveries until Stop or until ctx ends. A dispatcher starts
// once.
func (d *Dispatcher) Start(ctx context.Context) error {
	loopCtx, ok, started, stopped := d.StartInitOnce(ctx)
	if !ok {
		return errors.New("notify: dispatcher already started")
	}
	workCtx, kill := context.WithCancel(context.WithoutCancel(ctx))
	d.kill = kill
	wake := d.cfg.Store.Subscribe(loopCtx)
	go func() {
		defer stopped()
		started()
		d.loop(loopCtx, workCtx, wake)
	}()
	return nil
}

// Stop stops claiming, lets the attempts in flight finish until ctx ends, then cancels
// them (their deliveries are claimed again once their lease runs out). Idempotent.
func (d *Dispatcher) Stop(ctx context.Context) error {
	ok, loopDone, finish := d.StopInit()
	if !ok {
		return nil
	}
	defer finish(true)
	<-loopDone
	done := make(chan struct{})
	go func() { d.inflight.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		d.kill()
		<-done
		err = ctx.Err()
	}
	d.kill()
	return err
}

func (d *Dispatcher) loop(ctx, work context.Context, wake <-chan int64) {
	tick := time.NewTicker(d.cfg.Poll)
	defer tick.Stop()
	lastPrune := time.Time{}
	for {
		if free := cap(d.sem) - len(d.sem); free > 0 {
			n, err := d.claim(ctx, work, free)
			if err != nil && ctx.Err() == nil {
				d.cfg.Log.Warn("webhooks: claiming deliveries", "err", err)
			}
			if n == free && err == nil {
				continue // maybe more are due
			}
		}
		if time.Since(lastPrune) > time.Hour {
			lastPrune = time.Now()
			if n, err := d.cfg.Store.PruneWebhookDeliveries(ctx, time.Now().Add(-d.cfg.Keep)); err != nil && ctx.Err() == nil {
				d.cfg.Log.Warn("webhooks: pruning the delivery log", "err", err)
			} else if n > 0 {
				d.cfg.Log.Info("webhooks: pruned finished deliveries", "count", n)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-tick.C:
		case <-d.freed:
		}
	}
}

// lease is how long a claim keeps a delivery from other dispatchers: the attempt and
// the writing of its outcome.
func (d *Dispatcher) lease() time.Duration { return 2*d.cfg.Timeout + 10*time.Second }

func (d *Dispatcher) claim(ctx, work context.Context, n int) (int, error) {
	jobs, err := d.cfg.Store.ClaimWebhookDeliveries(ctx, time.Now(), d.lease(), n)
	if err != nil {
		return 0, err
	}
	for _, j := range jobs {
		d.sem <- struct{}{}
		d.inflight.Add(1)
		go func() {
			defer func() {
				<-d.sem
				d.inflight.Done()
				select {
				case d.freed <- struct{}{}:
				default:
				}
			}()
			d.deliver(work, j)
		}()
	}
	return len(jobs), nil
}

// deliver makes one attempt at j and records it.
func (d *Dispatcher) deliver(ctx context.Context, j models.HookJob) {
	claimedUntil := j.Delivery.NextAttemptAt
	o := d.Send(ctx, j)
	del := j.Delivery
	d.cfg.Retry.Settle(&del, o)
	disable := ""
	if o.Gone() {
		disable = fmt.Sprintf("the endpoint answered 410 Gone at %s", o.At.Format(time.RFC3339))
	}
	a := &models.WebhookAttempt{DeliveryID: del.ID, WebhookID: del.WebhookID, At: o.At, Status: o.Status, Error: o.Err,
		DurationMS: o.Duration.Milliseconds()}
	// Record even when stopping: the attempt was made.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := d.cfg.Store.RecordWebhookAttempt(rctx, &del, claimedUntil, a, disable); err != nil {
		d.cfg.Log.Warn("webhooks: recording an attempt", "webhook_id", del.WebhookID, "delivery_id", del.ID, "err", err)
		return
	}
	// The URL and the secrets stay out of the log: a URL can be a credential.
	log := d.cfg.Log.With("webhook_id", del.WebhookID, "delivery_id", del.ID, "event", del.Event, "attempt", del.Attempts,
		"status", o.Status, "ms", o.Duration.Milliseconds())
	switch {
	case o.OK():
		log.Debug("webhook delivered")
	case disable != "":
		log.Warn("webhook endpoint gone (410): disabled")
	case del.State == models.DeliveryFailed:
		log.Warn("webhook delivery failed for good", "err", o.Err)
	default:
		log.Info("webhook delivery failed; will retry", "err", o.Err, "next", del.NextAttemptAt)
	}
}

// Send makes one signed attempt at j and says what came of it.
func (d *Dispatcher) Send(ctx context.Context, j models.HookJob) models.HookOutcome {
	start := time.Now()
	o := models.HookOutcome{At: start.UTC()}
	done := func(status int, msg string) models.HookOutcome {
		o.Status, o.Err, o.Duration = status, msg, time.Since(start)
		return o
	}
	body, err := BuildBody(d.cfg.BaseURL, j.Delivery.Payload)
	if err != nil {
		return done(0, err.Error())
	}
	sig, err := Sign(j.Webhook.Secrets(), j.Delivery.MessageID, start, body)
	if err != nil {
		return done(0, err.Error())
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.Webhook.URL, bytes.NewReader(body))
	if err != nil {
		return done(0, "invalid URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Countersign-Webhooks/1")
	req.Header.Set(HeaderID, j.Delivery.MessageID)
	req.Header.Set(HeaderTimestamp, fmt.Sprint(start.Unix()))
	req.Header.Set(HeaderSignature, sig)
	resp, err := d.client.Do(req)
	if err != nil {
		return done(0, describe(err, d.cfg.Timeout))
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return done(resp.StatusCode, "")
	}
	msg := resp.Status
	if s := strings.TrimSpace(strings.ToValidUTF8(string(answer), "")); s != "" {
		msg += ": " + contract.Truncate(s, 200)
	}
	return done(resp.StatusCode, msg)
}

// describe says why no answer came, without the URL (a credential, for some).
func describe(err error, timeout time.Duration) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return fmt.Sprintf("no answer within %s", timeout)
	case errors.Is(err, context.Canceled):
		return "cancelled: the dispatcher stopped"
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return fmt.Sprintf("%s: %v", op.Op, op.Err)
	}
	return "request failed"
}
