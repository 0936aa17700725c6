package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/countersign/countersign/models"
)

// Webhooks: the endpoints, the outbox of deliveries written at an event's commit, the
// claims of the dispatcher (runner/notify) and the delivery log.

func init() {
	records = append(records, &webhookRecord{}, &webhookDeliveryRecord{}, &webhookAttemptRecord{})
}

var _ models.WebhookStore = (*DB)(nil)

// webhookRecord is a row of webhooks; events is a JSON array.
type webhookRecord struct {
	ID             int64 `gorm:"primaryKey"`
	Name           string
	URL            string `gorm:"column:url"`
	Events         string
	Secret         string
	PreviousSecret string
	Enabled        bool
	DisabledReason string
	CreatedBy      *int64
	CreatedAt      time.Time `gorm:"autoCreateTime:false"`
	UpdatedAt      time.Time `gorm:"autoUpdateTime:false"`
}

func (webhookRecord) TableName() string { return "webhooks" }

func toWebhookRecord(w *models.Webhook) (*webhookRecord, error) {
	events, err := toJSON(w.Events, "[]")
	if err != nil {
		return nil, err
	}
	return &webhookRecord{ID: w.ID, Name: w.Name, URL: w.URL, Events: events, Secret: w.Secret,
		PreviousSecret: w.PreviousSecret, Enabled: w.Enabled, DisabledReason: w.DisabledReason, CreatedBy: w.CreatedBy,
		CreatedAt: normTime(w.CreatedAt), UpdatedAt: normTime(w.UpdatedAt)}, nil
}

func fromWebhookRecord(r *webhookRecord) (*models.Webhook, error) {
	w := &models.Webhook{ID: r.ID, Name: r.Name, URL: r.URL, Secret: r.Secret, PreviousSecret: r.PreviousSecret,
		Enabled: r.Enabled, DisabledReason: r.DisabledReason, CreatedBy: r.CreatedBy,
		CreatedAt: normTime(r.CreatedAt), UpdatedAt: normTime(r.UpdatedAt), Events: []string{}}
	if err := fromJSON(r.Events, &w.Events, "webhooks.events"); err != nil {
		return nil, err
	}
	return w, nil
}

// webhookDeliveryRecord is a row of webhook_deliveries: the outbox.
type webhookDeliveryRecord struct {
	ID            int64 `gorm:"primaryKey"`
	WebhookID     int64
	EventID       int64
	Event         string
	MessageID     string
	Payload       string
	State         string
	Attempts      int
	NextAttemptAt time.Time
	LastStatus    int
	LastError     string
	CreatedAt     time.Time `gorm:"autoCreateTime:false"`
	UpdatedAt     time.Time `gorm:"autoUpdateTime:false"`
	DeliveredAt   *time.Time
}

func (webhookDeliveryRecord) TableName() string { return "webhook_deliveries" }

func toDeliveryRecord(d *models.WebhookDelivery) *webhookDeliveryRecord {
	return &webhookDeliveryRecord{ID: d.ID, WebhookID: d.WebhookID, EventID: d.EventID, Event: d.Event, MessageID: d.MessageID,
		Payload: string(d.Payload), State: d.State, Attempts: d.Attempts, NextAttemptAt: normTime(d.NextAttemptAt),
		LastStatus: d.LastStatus, LastError: d.LastError, CreatedAt: normTime(d.CreatedAt), UpdatedAt: normTime(d.UpdatedAt),
		DeliveredAt: normTimePtr(d.DeliveredAt)}
}

func fromDeliveryRecord(r *webhookDeliveryRecord) *models.WebhookDelivery {
	return &models.WebhookDelivery{ID: r.ID, WebhookID: r.WebhookID, EventID: r.EventID, Event: r.Event, MessageID: r.MessageID,
		Payload: rawOrNil(r.Payload), State: r.State, Attempts: r.Attempts, NextAttemptAt: normTime(r.NextAttemptAt),
		LastStatus: r.LastStatus, LastError: r.LastError, CreatedAt: normTime(r.CreatedAt), UpdatedAt: normTime(r.UpdatedAt),
		DeliveredAt: normTimePtr(r.DeliveredAt)}
}

// webhookAttemptRecord is a row of webhook_attempts: the delivery log.
type webhookAttemptRecord struct {
	ID         int64 `gorm:"primaryKey"`
	DeliveryID int64
	WebhookID  int64
	At         time.Time
	Status     int
	Error      string
	DurationMS int64 `gorm:"column:duration_ms"`
}

func (webhookAttemptRecord) TableName() string { return "webhook_attempts" }

func fromHookAttemptRecord(r *webhookAttemptRecord) models.WebhookAttempt {
	return models.WebhookAttempt{ID: r.ID, DeliveryID: r.DeliveryID, WebhookID: r.WebhookID, At: normTime(r.At),
		Status: r.Status, Error: r.Error, DurationMS: r.DurationMS}
}

// CreateWebhook stores w and sets its ID; a name in use is ECONFLICT.
func (o *ops) CreateWebhook(ctx context.Context, w *models.Webhook) error {
	if w.CreatedAt.IsZero() {
		w.CreatedAt = now()
	}
	w.UpdatedAt = now()
	rec, err := toWebhookRecord(w)
	if err != nil {
		return err
	}
	rec.ID = 0
	if err := o.q(ctx).Create(rec).Error; err != nil {
		return conflictOr(err, "webhook", "a webhook named %q already exists", w.Name)
	}
	nw, err := fromWebhookRecord(rec)
	if err != nil {
		return err
	}
	*w = *nw
	return nil
}

// UpdateWebhook saves every field of w.
func (o *ops) UpdateWebhook(ctx context.Context, w *models.Webhook) error {
	w.UpdatedAt = now()
	rec, err := toWebhookRecord(w)
	if err != nil {
		return err
	}
	res := o.q(ctx).Select("*").Omit("id", "created_at").Where("id = ?", w.ID).Updates(rec)
	if res.Error != nil {
		return conflictOr(res.Error, "webhook", "a webhook named %q already exists", w.Name)
	}
	if res.RowsAffected == 0 {
		return models.NotFound("webhook", w.ID)
	}
	w.UpdatedAt = normTime(w.UpdatedAt)
	w.CreatedAt = normTime(w.CreatedAt)
	return nil
}

// GetWebhook returns endpoint id.
func (o *ops) GetWebhook(ctx context.Context, id int64) (*models.Webhook, error) {
	var rec webhookRecord
	if err := o.q(ctx).Take(&rec, "id = ?", id).Error; err != nil {
		return nil, readError(err, "webhook", id)
	}
	return fromWebhookRecord(&rec)
}

// ListWebhooks returns every endpoint by name.
func (o *ops) ListWebhooks(ctx context.Context) ([]models.Webhook, error) {
	var recs []webhookRecord
	if err := o.q(ctx).Order("name").Limit(1000).Find(&recs).Error; err != nil {
		return nil, mapError(err, "webhooks")
	}
	out := make([]models.Webhook, 0, len(recs))
	for i := range recs {
		w, err := fromWebhookRecord(&recs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, *w)
	}
	return out, nil
}

// DeleteWebhook removes endpoint id; its deliveries and their log go with it.
func (o *ops) DeleteWebhook(ctx context.Context, id int64) error {
	res := o.q(ctx).Delete(&webhookRecord{}, "id = ?", id)
	if res.Error != nil {
		return mapError(res.Error, "webhook")
	}
	if res.RowsAffected == 0 {
		return models.NotFound("webhook", id)
	}
	return nil
}

// CreateWebhookDelivery stores d as it is (tests and tools; the outbox writes its own
// at commit) and sets its ID.
func (o *ops) CreateWebhookDelivery(ctx context.Context, d *models.WebhookDelivery) error {
	if d.CreatedAt.IsZero() {
		d.CreatedAt = now()
	}
	if d.UpdatedAt.IsZero() {
		d.UpdatedAt = d.CreatedAt
	}
	rec := toDeliveryRecord(d)
	rec.ID = 0
	if err := o.q(ctx).Create(rec).Error; err != nil {
		return conflictOr(err, "delivery", "delivery %s of webhook %d already exists", d.MessageID, d.WebhookID)
	}
	*d = *fromDeliveryRecord(rec)
	return nil
}

// GetWebhookDelivery returns delivery id.
func (o *ops) GetWebhookDelivery(ctx context.Context, id int64) (*models.WebhookDelivery, error) {
	var rec webhookDeliveryRecord
	if err := o.q(ctx).Take(&rec, "id = ?", id).Error; err != nil {
		return nil, readError(err, "delivery", id)
	}
	return fromDeliveryRecord(&rec), nil
}

// ListWebhookDeliveries returns a webhook's newest limit deliveries, newest first.
func (o *ops) ListWebhookDeliveries(ctx context.Context, webhookID int64, limit int) ([]models.WebhookDelivery, error) {
	var recs []webhookDeliveryRecord
	if err := o.q(ctx).Where("webhook_id = ?", webhookID).Order("id DESC").Limit(listLimit(limit)).Find(&recs).Error; err != nil {
		return nil, mapError(err, "deliveries")
	}
	out := make([]models.WebhookDelivery, len(recs))
	for i := range recs {
		out[i] = *fromDeliveryRecord(&recs[i])
	}
	return out, nil
}

// ListWebhookAttempts returns a webhook's newest limit attempts, newest first.
func (o *ops) ListWebhookAttempts(ctx context.Context, webhookID int64, limit int) ([]models.WebhookAttempt, error) {
	var recs []webhookAttemptRecord
	if err := o.q(ctx).Where("webhook_id = ?", webhookID).Order("id DESC").Limit(listLimit(limit)).Find(&recs).Error; err != nil {
		return nil, mapError(err, "delivery attempts")
	}
	out := make([]models.WebhookAttempt, len(recs))
	for i := range recs {
		out[i] = fromHookAttemptRecord(&recs[i])
	}
	return out, nil
}

// RedeliverWebhook makes delivery id pending and due at at.
func (o *ops) RedeliverWebhook(ctx context.Context, id int64, at time.Time) error {
	res := o.q(ctx).Model(&webhookDeliveryRecord{}).Where("id = ?", id).
		Updates(map[string]any{"state": models.DeliveryPending, "next_attempt_at": normTime(at), "updated_at": now()})
	if res.Error != nil {
		return mapError(res.Error, "delivery")
	}
	if res.RowsAffected == 0 {
		return models.NotFound("delivery", id)
	}
	return nil
}

// ClaimWebhookDeliveries takes up to limit pending deliveries due at now of enabled
// endpoints, counts the attempt about to be made and moves each past now+lease, so no
// other dispatcher takes it meanwhile and a dead one's claim runs out by itself; it
// returns them with their endpoints. On PostgreSQL rows another dispatcher is claiming
// are skipped (SKIP LOCKED), never waited for.
func (d *DB) ClaimWebhookDeliveries(ctx context.Context, at time.Time, lease time.Duration, limit int) ([]models.HookJob, error) {
	// Most wake-ups find nothing due: look first without a (write) transaction, which
	// on SQLite would take the database's write lock from the runner.
	var due []int64
	err := d.q(ctx).Model(&webhookDeliveryRecord{}).Select("id").
		Where("state = ? AND next_attempt_at <= ?", models.DeliveryPending, normTime(at)).Limit(1).Find(&due).Error
	if err != nil || len(due) == 0 {
		return nil, mapError(err, "deliveries")
	}
	var jobs []models.HookJob
	err = d.InTx(ctx, func(t models.Tx) error {
		o := t.(*ops)
		var recs []webhookDeliveryRecord
		q := o.q(ctx).Where("state = ? AND next_attempt_at <= ?", models.DeliveryPending, normTime(at)).
			Where("webhook_id IN (?)", o.q(ctx).Model(&webhookRecord{}).Select("id").Where("enabled = ?", true)).
			Order("next_attempt_at, id").Limit(limit)
		if err := o.skipLocked(q).Find(&recs).Error; err != nil {
			return mapError(err, "deliveries")
		}
		if len(recs) == 0 {
			return nil
		}
		ids := make([]int64, len(recs))
		hookIDs := map[int64]bool{}
		for i := range recs {
			ids[i] = recs[i].ID
			hookIDs[recs[i].WebhookID] = true
		}
		until := normTime(at.Add(lease))
		err := o.q(ctx).Model(&webhookDeliveryRecord{}).Where("id IN ?", ids).
			Updates(map[string]any{"attempts": gorm.Expr("attempts + 1"), "next_attempt_at": until}).Error
		if err != nil {
			return mapError(err, "deliveries")
		}
		var hrecs []webhookRecord
		keys := make([]int64, 0, len(hookIDs))
		for id := range hookIDs {
			keys = append(keys, id)
		}
		if err := o.q(ctx).Where("id IN ?", keys).Find(&hrecs).Error; err != nil {
			return mapError(err, "webhooks")
		}
		hooks := map[int64]*models.Webhook{}
		for i := range hrecs {
			w, err := fromWebhookRecord(&hrecs[i])
			if err != nil {
				return err
			}
			hooks[w.ID] = w
		}
		for i := range recs {
			recs[i].Attempts++
			recs[i].NextAttemptAt = until
			if w := hooks[recs[i].WebhookID]; w != nil {
				jobs = append(jobs, models.HookJob{Delivery: *fromDeliveryRecord(&recs[i]), Webhook: *w})
			}
		}
		return nil
	})
	return jobs, err
}

// RecordWebhookAttempt writes one attempt at d to the delivery log and d as settled
// (models.RetryPolicy.Settle); gone disables d's endpoint with reason. Only the claim
// that made the attempt writes it: a delivery redelivered or claimed again meanwhile
// keeps its new state (the log line is written all the same).
func (d *DB) RecordWebhookAttempt(ctx context.Context, del *models.WebhookDelivery, claimedUntil time.Time, a *models.WebhookAttempt, disable string) error {
	return d.InTx(ctx, func(t models.Tx) error {
		o := t.(*ops)
		rec := webhookAttemptRecord{DeliveryID: a.DeliveryID, WebhookID: a.WebhookID, At: normTime(a.At), Status: a.Status,
			Error: a.Error, DurationMS: a.DurationMS}
		if err := o.q(ctx).Create(&rec).Error; err != nil {
			return mapError(err, "delivery attempt")
		}
		a.ID = rec.ID
		dr := toDeliveryRecord(del)
		err := o.q(ctx).Model(&webhookDeliveryRecord{}).
			Where("id = ? AND state = ? AND next_attempt_at = ?", del.ID, models.DeliveryPending, normTime(claimedUntil)).
			Updates(map[string]any{"state": dr.State, "next_attempt_at": dr.NextAttemptAt, "last_status": dr.LastStatus,
				"last_error": dr.LastError, "updated_at": dr.UpdatedAt, "delivered_at": dr.DeliveredAt}).Error
		if err != nil {
			return mapError(err, "delivery")
		}
		if disable != "" {
			err := o.q(ctx).Model(&webhookRecord{}).Where("id = ?", del.WebhookID).
				Updates(map[string]any{"enabled": false, "disabled_reason": disable, "updated_at": now()}).Error
			if err != nil {
				return mapError(err, "webhook")
			}
		}
		return nil
	})
}

// PruneWebhookDeliveries deletes the deliveries finished (delivered or failed) before
// before, with their log, and returns how many.
func (d *DB) PruneWebhookDeliveries(ctx context.Context, before time.Time) (int64, error) {
	res := d.q(ctx).Where("state <> ? AND updated_at < ?", models.DeliveryPending, normTime(before)).Delete(&webhookDeliveryRecord{})
	return res.RowsAffected, mapError(res.Error, "deliveries")
}

// outbox is what flushAppends writes for webhooks: the notifications the held events
// cause, with the endpoints subscribed to each, found before the events are inserted
// (so the append lock is not held for the reads) and written after (they need the
// events' ids).
type outbox struct {
	items []outboxItem
}

type outboxItem struct {
	event *models.Event // its ID is set once inserted
	facts models.HookFacts
	hooks []int64
}

// planOutbox finds the notifications the events held by the transaction cause. It
// reads nothing unless an event may cause one, and then the enabled endpoints; only
// when one subscribes does it read the task or goal for the payload.
func (o *ops) planOutbox(ctx context.Context, events []*models.Event) (*outbox, error) {
	type candidate struct {
		event *models.Event
		name  string // its HookCandidate
	}
	var candidates []candidate
	for _, e := range events {
		if name := models.HookCandidate(e); name != "" {
			candidates = append(candidates, candidate{e, name})
		}
	}
	if len(candidates) == 0 {
		return nil, nil
	}
	var recs []webhookRecord
	if err := o.q(ctx).Where("enabled = ?", true).Find(&recs).Error; err != nil {
		return nil, mapError(err, "webhooks")
	}
	if len(recs) == 0 {
		return nil, nil
	}
	hooks := make([]*models.Webhook, 0, len(recs))
	for i := range recs {
		w, err := fromWebhookRecord(&recs[i])
		if err != nil {
			return nil, err
		}
		hooks = append(hooks, w)
	}
	subscribed := func(names ...string) bool {
		for _, w := range hooks {
			for _, n := range names {
				if w.Subscribes(n) {
					return true
				}
			}
		}
		return false
	}
	plan := &outbox{}
	for _, c := range candidates {
		e, name := c.event, c.name
		if name == models.HookTaskBlocked {
			if !subscribed(models.HookTaskBlocked, models.HookBudgetStopped) {
				continue
			}
			var err error
			if name, err = models.HookFor(ctx, o, e); err != nil {
				return nil, err
			}
		}
		item := outboxItem{event: e}
		for _, w := range hooks {
			if w.Subscribes(name) {
				item.hooks = append(item.hooks, w.ID)
			}
		}
		if len(item.hooks) == 0 {
			continue
		}
		f := models.HookFacts{Event: name, EventType: e.Type, TaskID: e.TaskID, GoalID: e.GoalID, Detail: e.Data}
		if e.TaskID != nil {
			if t, err := o.GetTask(ctx, *e.TaskID); err == nil {
				f.TaskTitle = t.Title
			}
		}
		if e.GoalID != nil {
			if g, err := o.GetGoal(ctx, *e.GoalID); err == nil {
				f.GoalTitle = g.Title
			}
		}
		item.facts = f
		plan.items = append(plan.items, item)
	}
	if len(plan.items) == 0 {
		return nil, nil
	}
	return plan, nil
}

// writeOutbox inserts the planned deliveries, due at once, in one statement; the
// events have their ids now.
func (o *ops) writeOutbox(ctx context.Context, plan *outbox) error {
	if plan == nil {
		return nil
	}
	var recs []webhookDeliveryRecord
	at := now()
	for _, it := range plan.items {
		f := it.facts
		f.EventID, f.At = it.event.ID, normTime(it.event.CreatedAt)
		payload, err := json.Marshal(f)
		if err != nil {
			return fmt.Errorf("store: encode webhook payload: %w", err)
		}
		for _, id := range it.hooks {
			recs = append(recs, webhookDeliveryRecord{WebhookID: id, EventID: it.event.ID, Event: f.Event,
				MessageID: fmt.Sprintf("msg_%d_%d", it.event.ID, id), Payload: string(payload), State: models.DeliveryPending,
				NextAttemptAt: at, CreatedAt: at, UpdatedAt: at})
		}
	}
	if err := o.q(ctx).Create(&recs).Error; err != nil {
		return mapError(err, "deliveries")
	}
	return nil
}
