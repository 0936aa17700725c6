-- 0013_webhooks (SQLite): signed notifications (Standard Webhooks) from an outbox.

-- Admin-defined endpoints. events is a JSON array of the notification names the
-- endpoint subscribes to (task.blocked, task.escalated, question.asked,
-- goal.pending_verify, budget.stopped). secret signs every delivery (whsec_…, a shared
-- secret, so it is stored as is, shown once and never rendered again);
-- previous_secret, while a secret is rotated, signs too (two signatures). An endpoint
-- that answered 410 Gone is disabled with the reason.
CREATE TABLE webhooks (
    id              INTEGER     PRIMARY KEY AUTOINCREMENT,
    name            TEXT        NOT NULL,
    url             TEXT        NOT NULL,
    events          TEXT        NOT NULL DEFAULT '[]',
    secret          TEXT        NOT NULL,
    previous_secret TEXT        NOT NULL DEFAULT '',
    enabled         BOOLEAN     NOT NULL DEFAULT 1,
    disabled_reason TEXT        NOT NULL DEFAULT '',
    created_by      BIGINT      REFERENCES agents (id),
    created_at      DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at      DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT webhooks_name_key UNIQUE (name)
);

-- The outbox: one row per (endpoint, event, notification), written in the same
-- transaction as the event. message_id is the webhook-id header (the same on every
-- retry); payload the notification's facts as JSON. A pending row is due at
-- next_attempt_at; a dispatcher claims it by moving next_attempt_at past its
-- attempt's deadline (a lease), so a dead dispatcher's claim runs out by itself.
CREATE TABLE webhook_deliveries (
    id              INTEGER     PRIMARY KEY AUTOINCREMENT,
    webhook_id      BIGINT      NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id        BIGINT      NOT NULL REFERENCES events (id),
    event           TEXT        NOT NULL,
    message_id      TEXT        NOT NULL,
    payload         TEXT        NOT NULL DEFAULT '',
    state           TEXT        NOT NULL DEFAULT 'pending',
    attempts        INTEGER     NOT NULL DEFAULT 0,
    next_attempt_at DATETIME    NOT NULL,
    last_status     INTEGER     NOT NULL DEFAULT 0,
    last_error      TEXT        NOT NULL DEFAULT '',
    created_at      DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at      DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    delivered_at    DATETIME   ,
    CONSTRAINT webhook_deliveries_message_key UNIQUE (webhook_id, message_id)
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, id);

-- The delivery log: every attempt's status code (0 when none came), error and
-- duration. Bounded by the retry schedule per delivery and by the dispatcher's
-- pruning of finished deliveries.
CREATE TABLE webhook_attempts (
    id          INTEGER     PRIMARY KEY AUTOINCREMENT,
    delivery_id BIGINT      NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    webhook_id  BIGINT      NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    at          DATETIME    NOT NULL,
    status      INTEGER     NOT NULL DEFAULT 0,
    error       TEXT        NOT NULL DEFAULT '',
    duration_ms BIGINT      NOT NULL DEFAULT 0
);
CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id, id);
CREATE INDEX webhook_attempts_webhook_idx ON webhook_attempts (webhook_id, id);
