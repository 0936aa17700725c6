package models

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Notifications an admin-defined webhook can subscribe to. Each is delivered once per
// event that causes it:
//   - task.blocked: a task.blocked event (attempts exhausted, a failed check layer, not
//     ready, a question left unanswered), except a budget stop;
//   - budget.stopped: a task.blocked event whose task was stopped by a budget (its
//     blocked item ends at stage budget), instead of task.blocked;
//   - task.escalated: a task.escalated event (two rejections);
//   - question.asked: a question.asked event (a worker asks a person);
//   - goal.pending_verify: a goal.state_changed event to pending_verify.
const (
	HookTaskBlocked       = "task.blocked"
	HookTaskEscalated     = "task.escalated"
	HookQuestionAsked     = "question.asked"
	HookGoalPendingVerify = "goal.pending_verify"
	HookBudgetStopped     = "budget.stopped"
)

// HookNames lists the notifications, in the order forms show them.
var HookNames = []string{HookTaskBlocked, HookTaskEscalated, HookQuestionAsked, HookGoalPendingVerify, HookBudgetStopped}

// WebhookSecretPrefix starts every signing secret (Standard Webhooks): the rest is the
// base64 of the key.
const WebhookSecretPrefix = "whsec_"

// Delivery states.
const (
	DeliveryPending   = "pending"   // due at NextAttemptAt
	DeliveryDelivered = "delivered" // a 2xx answer
	DeliveryFailed    = "failed"    // no 2xx within WebhookRetryFor of the event
)

// Webhook is an admin-defined endpoint. Secret signs every delivery; PreviousSecret,
// while the secret is rotated, signs too. Both are shared secrets: stored as they are
// (they must be, to sign), shown once when made, never logged, rendered or put in an
// event. The URL is treated alike outside the admin page (a Slack incoming-webhook URL
// is a credential).
type Webhook struct {
	ID             int64     `json:"id"`
	Name           string    `json:"name"`
	URL            string    `json:"url"`
	Events         []string  `json:"events"`
	Secret         string    `json:"-"`
	PreviousSecret string    `json:"-"`
	Enabled        bool      `json:"enabled"`
	DisabledReason string    `json:"disabled_reason,omitempty"`
	CreatedBy      *int64    `json:"created_by,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// Subscribes reports whether w wants notification name.
func (w *Webhook) Subscribes(name string) bool { return slices.Contains(w.Events, name) }

// Secrets returns the secrets deliveries are signed with: the current one, then the
// previous one while a rotation is under way.
func (w *Webhook) Secrets() []string {
	out := []string{w.Secret}
	if w.PreviousSecret != "" {
		out = append(out, w.PreviousSecret)
	}
	return out
}

// Validate checks the fields an admin sets. The URL must be absolute http or https
// with a host and no user info; where it points is the admin's decision (deliveries
// never follow redirects).
func (w *Webhook) Validate() error {
	fe := FieldErrors{}
	w.Name = strings.TrimSpace(w.Name)
	w.URL = strings.TrimSpace(w.URL)
	if w.Name == "" {
		fe.Add("name", "must not be empty")
	} else if len(w.Name) > 100 {
		fe.Add("name", "must be at most 100 characters")
	}
	if msg := webhookURLProblem(w.URL); msg != "" {
		fe.Add("url", msg)
	}
	if len(w.Events) == 0 {
		fe.Add("events", "choose at least one event")
	}
	for _, e := range w.Events {
		if !slices.Contains(HookNames, e) {
			fe.Add("events", fmt.Sprintf("unknown event %q (known: %s)", e, strings.Join(HookNames, ", ")))
		}
	}
	slices.Sort(w.Events)
	w.Events = slices.Compact(w.Events)
	return fe.Err()
}

func webhookURLProblem(raw string) string {
	if raw == "" {
		return "must not be empty"
	}
	if len(raw) > 2000 {
		return "must be at most 2000 characters"
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "not a URL"
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "must be an http:// or https:// URL"
	}
	if u.Host == "" || u.Hostname() == "" {
		return "must name a host"
	}
	if u.User != nil {
		return "must not carry a user name or password"
	}
	if u.Fragment != "" {
		return "must not have a #fragment"
	}
	return ""
}

// NewWebhookSecret returns a new signing secret: whsec_ and the base64 of 32 random
// bytes, as Standard Webhooks libraries expect.
func NewWebhookSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return WebhookSecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// WebhookDelivery is one notification to one endpoint: a row of the outbox written in
// the transaction of the event that caused it. MessageID is its webhook-id (the same
// on every attempt and on a redelivery). Payload holds the notification's facts; the
// dispatcher adds the page's URL and the Slack text when it sends it.
type WebhookDelivery struct {
	ID            int64           `json:"id"`
	WebhookID     int64           `json:"webhook_id"`
	EventID       int64           `json:"event_id"`
	Event         string          `json:"event"`
	MessageID     string          `json:"message_id"`
	Payload       json.RawMessage `json:"payload"`
	State         string          `json:"state"`
	Attempts      int             `json:"attempts"`
	NextAttemptAt time.Time       `json:"next_attempt_at"`
	LastStatus    int             `json:"last_status,omitempty"`
	LastError     string          `json:"last_error,omitempty"`
	CreatedAt     time.Time       `json:"created_at"`
	UpdatedAt     time.Time       `json:"updated_at"`
	DeliveredAt   *time.Time      `json:"delivered_at,omitempty"`
}

// WebhookAttempt is one line of the delivery log: one request and what came of it.
// Status is the HTTP status (0 when none came); Error says why not, or what a non-2xx
// answer meant.
type WebhookAttempt struct {
	ID         int64     `json:"id"`
	DeliveryID int64     `json:"delivery_id"`
	WebhookID  int64     `json:"webhook_id"`
	At         time.Time `json:"at"`
	Status     int       `json:"status"`
	Error      string    `json:"error,omitempty"`
	DurationMS int64     `json:"duration_ms"`
}

// HookFacts is what a delivery's payload holds: the notification, the event behind it
// and what a reader needs to recognise the task or goal. The dispatcher turns it into
// the JSON body (with the page's URL and a Slack-compatible text).
type HookFacts struct {
	Event     string          `json:"event"`      // the notification: task.blocked, …
	EventID   int64           `json:"event_id"`   // the event that caused it
	EventType string          `json:"event_type"` // that event's own type
	At        time.Time       `json:"at"`         // when the event happened
	TaskID    *int64          `json:"task_id,omitempty"`
	TaskTitle string          `json:"task_title,omitempty"`
	GoalID    *int64          `json:"goal_id,omitempty"`
	GoalTitle string          `json:"goal_title,omitempty"`
	Detail    json.RawMessage `json:"detail,omitempty"` // the event's data
}

// HookCandidate says which notification an event may cause without reading the
// database: "" for none; task.blocked also stands for a budget stop, which
// HookFor tells apart.
func HookCandidate(e *Event) string {
	switch e.Type {
	case "task.blocked", "task.escalated", "question.asked":
		return e.Type
	case "goal.state_changed":
		var d struct {
			To GoalState `json:"to"`
		}
		if json.Unmarshal(e.Data, &d) == nil && d.To == GoalPendingVerify {
			return HookGoalPendingVerify
		}
	}
	return ""
}

// HookFor returns the notification event e causes, reading in tx what it must: a
// blocked task whose open blocked item ends at stage budget is budget.stopped.
func HookFor(ctx context.Context, tx Tx, e *Event) (string, error) {
	name := HookCandidate(e)
	if name == HookTaskBlocked && e.TaskID != nil {
		budget, err := blockedAt(ctx, tx, *e.TaskID, StageBudget)
		if err != nil {
			return "", err
		}
		if budget {
			return HookBudgetStopped, nil
		}
	}
	return name, nil
}

// RetryPolicy says when a failed delivery is tried again: after Initial, then each
// wait Factor times the last, at most Max, until RetryFor after the event; then the
// delivery fails.
type RetryPolicy struct {
	Initial  time.Duration
	Factor   float64
	Max      time.Duration
	RetryFor time.Duration
}

// DefaultRetryPolicy: 5s, 30s, 3m, 18m, then hourly, for a day.
var DefaultRetryPolicy = RetryPolicy{Initial: 5 * time.Second, Factor: 6, Max: time.Hour, RetryFor: 24 * time.Hour}

// Wait returns how long to wait after the n-th failed attempt (n ≥ 1).
func (p RetryPolicy) Wait(n int) time.Duration {
	d := p.Initial
	f := max(p.Factor, 1)
	for i := 1; i < n && d < p.Max; i++ {
		d = time.Duration(float64(d) * f)
	}
	return min(d, p.Max)
}

// HookOutcome is what one attempt at a delivery came to.
type HookOutcome struct {
	At       time.Time
	Status   int // 0: no answer
	Err      string
	Duration time.Duration
}

// OK reports whether the endpoint took the delivery (2xx).
func (o HookOutcome) OK() bool { return o.Status >= 200 && o.Status < 300 }

// Gone reports whether the endpoint asked never to be called again (410).
func (o HookOutcome) Gone() bool { return o.Status == 410 }

// Settle applies outcome to d after its Attempts-th attempt (already counted): a 2xx
// delivers it; otherwise it waits per p, or fails once the next try would come later
// than RetryFor after the event. A 410 fails it (the endpoint is disabled).
func (p RetryPolicy) Settle(d *WebhookDelivery, o HookOutcome) {
	d.LastStatus, d.LastError, d.UpdatedAt = o.Status, o.Err, o.At
	switch {
	case o.OK():
		d.State = DeliveryDelivered
		at := o.At
		d.DeliveredAt = &at
	case o.Gone():
		d.State = DeliveryFailed
	default:
		next := o.At.Add(p.Wait(max(d.Attempts, 1)))
		if next.After(d.CreatedAt.Add(p.RetryFor)) {
			d.State = DeliveryFailed
			return
		}
		d.State, d.NextAttemptAt = DeliveryPending, next
	}
}

// WebhookTx is what the webhook store adds to a Tx. The gorm store's transactions
// implement it.
type WebhookTx interface {
	Tx
	CreateWebhook(ctx context.Context, w *Webhook) error
	UpdateWebhook(ctx context.Context, w *Webhook) error
	GetWebhook(ctx context.Context, id int64) (*Webhook, error)
	ListWebhooks(ctx context.Context) ([]Webhook, error)
	DeleteWebhook(ctx context.Context, id int64) error
	GetWebhookDelivery(ctx context.Context, id int64) (*WebhookDelivery, error)
	// ListWebhookDeliveries returns a webhook's newest limit deliveries, newest first.
	ListWebhookDeliveries(ctx context.Context, webhookID int64, limit int) ([]WebhookDelivery, error)
	// ListWebhookAttempts returns a webhook's newest limit attempts, newest first.
	ListWebhookAttempts(ctx context.Context, webhookID int64, limit int) ([]WebhookAttempt, error)
	// RedeliverWebhook makes delivery id pending and due at at, whatever its state.
	RedeliverWebhook(ctx context.Context, id int64, at time.Time) error
}

// WebhookStore is a Store with the webhook store.
type WebhookStore interface {
	Store
	WebhookTx
}

// Webhooks manages the endpoints: admins only, every change an event (webhook.*)
// naming the endpoint, never its URL or secrets.
type Webhooks struct {
	store WebhookStore
	c     *core // its clock and events
}

// NewWebhooks returns the webhook admin service over svc's store; EINTERNAL when that
// store keeps no webhooks.
func NewWebhooks(svc *Service) (*Webhooks, error) {
	ws, ok := svc.c.store.(WebhookStore)
	if !ok {
		return nil, Errorf(EINTERNAL, "this store keeps no webhooks")
	}
	return &Webhooks{store: ws, c: svc.c}, nil
}

func (h *Webhooks) now() time.Time { return h.c.now() }

// Store returns the webhook store, for readers.
func (h *Webhooks) Store() WebhookStore { return h.store }

func (h *Webhooks) change(ctx context.Context, actor *Agent, typ string, w *Webhook, extra map[string]any, fn func(tx WebhookTx) error) error {
	if err := requireAny(actor, "admin_only", RoleAdmin); err != nil {
		return err
	}
	return h.store.InTx(ctx, func(t Tx) error {
		tx, ok := t.(WebhookTx)
		if !ok {
			return Errorf(EINTERNAL, "this store keeps no webhooks")
		}
		if err := fn(tx); err != nil {
			return err
		}
		data := map[string]any{"webhook_id": w.ID, "name": w.Name}
		for k, v := range extra {
			data[k] = v
		}
		return h.c.emit(ctx, tx, typ, actor, nil, nil, data)
	})
}

// Create adds an endpoint, enabled, with a new secret, and returns that secret: the
// only time it is shown.
func (h *Webhooks) Create(ctx context.Context, actor *Agent, w *Webhook) (string, error) {
	if err := w.Validate(); err != nil {
		return "", err
	}
	w.ID, w.Secret, w.PreviousSecret, w.Enabled, w.DisabledReason = 0, NewWebhookSecret(), "", true, ""
	w.CreatedAt, w.UpdatedAt = h.now(), h.now()
	if actor != nil && actor.ID != 0 {
		id := actor.ID
		w.CreatedBy = &id
	}
	err := h.change(ctx, actor, "webhook.created", w, map[string]any{"events": w.Events}, func(tx WebhookTx) error {
		return tx.CreateWebhook(ctx, w)
	})
	if err != nil {
		return "", err
	}
	return w.Secret, nil
}

// Update saves the name, URL, events and enabled of endpoint in.ID; enabling clears
// the reason it was disabled.
func (h *Webhooks) Update(ctx context.Context, actor *Agent, in *Webhook) (*Webhook, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	var w *Webhook
	err := h.change(ctx, actor, "webhook.updated", in, map[string]any{"events": in.Events, "enabled": in.Enabled}, func(tx WebhookTx) error {
		cur, err := tx.GetWebhook(ctx, in.ID)
		if err != nil {
			return err
		}
		cur.Name, cur.URL, cur.Events, cur.UpdatedAt = in.Name, in.URL, in.Events, h.now()
		if in.Enabled && !cur.Enabled {
			cur.DisabledReason = ""
		}
		if !in.Enabled && cur.Enabled {
			cur.DisabledReason = "disabled by an admin"
		}
		cur.Enabled = in.Enabled
		w = cur
		return tx.UpdateWebhook(ctx, cur)
	})
	return w, err
}

// RotateSecret gives endpoint id a new secret and keeps the current one as the
// previous one, so that deliveries carry both signatures until RemovePreviousSecret;
// it returns the new secret, shown only now. ECONFLICT while a rotation is under way.
func (h *Webhooks) RotateSecret(ctx context.Context, actor *Agent, id int64) (string, error) {
	secret := NewWebhookSecret()
	w := &Webhook{ID: id}
	err := h.change(ctx, actor, "webhook.secret_rotated", w, nil, func(tx WebhookTx) error {
		cur, err := tx.GetWebhook(ctx, id)
		if err != nil {
			return err
		}
		if cur.PreviousSecret != "" {
			return Errorf(ECONFLICT, "webhook %s already signs with two secrets: remove the previous one first", cur.Name)
		}
		w.Name = cur.Name
		cur.PreviousSecret, cur.Secret, cur.UpdatedAt = cur.Secret, secret, h.now()
		return tx.UpdateWebhook(ctx, cur)
	})
	if err != nil {
		return "", err
	}
	return secret, nil
}

// RemovePreviousSecret ends a rotation: deliveries are signed with the new secret only.
func (h *Webhooks) RemovePreviousSecret(ctx context.Context, actor *Agent, id int64) error {
	w := &Webhook{ID: id}
	return h.change(ctx, actor, "webhook.secret_removed", w, nil, func(tx WebhookTx) error {
		cur, err := tx.GetWebhook(ctx, id)
		if err != nil {
			return err
		}
		if cur.PreviousSecret == "" {
			return Errorf(ECONFLICT, "webhook %s has no previous secret", cur.Name)
		}
		w.Name = cur.Name
		cur.PreviousSecret, cur.UpdatedAt = "", h.now()
		return tx.UpdateWebhook(ctx, cur)
	})
}

// Delete removes endpoint id with its deliveries and their log.
func (h *Webhooks) Delete(ctx context.Context, actor *Agent, id int64) error {
	w := &Webhook{ID: id}
	return h.change(ctx, actor, "webhook.deleted", w, nil, func(tx WebhookTx) error {
		cur, err := tx.GetWebhook(ctx, id)
		if err != nil {
			return err
		}
		w.Name = cur.Name
		return tx.DeleteWebhook(ctx, id)
	})
}

// Redeliver sends delivery id of endpoint webhookID again now, whatever came of it
// before, with the same webhook-id (receivers deduplicate on it). A disabled endpoint
// must be enabled first (ECONFLICT).
func (h *Webhooks) Redeliver(ctx context.Context, actor *Agent, webhookID, id int64) error {
	w := &Webhook{ID: webhookID}
	return h.change(ctx, actor, "webhook.redelivered", w, map[string]any{"delivery_id": id}, func(tx WebhookTx) error {
		cur, err := tx.GetWebhook(ctx, webhookID)
		if err != nil {
			return err
		}
		w.Name = cur.Name
		d, err := tx.GetWebhookDelivery(ctx, id)
		if err != nil {
			return err
		}
		if d.WebhookID != webhookID {
			return NotFound("delivery", id)
		}
		if !cur.Enabled {
			return Errorf(ECONFLICT, "webhook %s is disabled: enable it to redeliver", cur.Name)
		}
		return tx.RedeliverWebhook(ctx, id, h.now())
	})
}

// HookJob is a claimed delivery with its endpoint: what a dispatcher sends.
type HookJob struct {
	Delivery WebhookDelivery
	Webhook  Webhook
}
