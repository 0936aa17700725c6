-- Forges (issue #36): GitHub and GitLab repositories that verified task branches are
-- pushed to and opened as pull (merge) requests on, with the countersign/verified
-- commit status. token is the credential Countersign acts with and webhook_secret
-- checks the forge's deliveries: stored as they are (they must be, to be used), never
-- rendered, logged or put in an event.
CREATE TABLE forges (
    id             INTEGER     PRIMARY KEY AUTOINCREMENT,
    name           TEXT        NOT NULL,
    kind           TEXT        NOT NULL,
    base_url       TEXT        NOT NULL DEFAULT '',
    repo           TEXT        NOT NULL,
    target_branch  TEXT        NOT NULL DEFAULT '',
    token          TEXT        NOT NULL,
    webhook_secret TEXT        NOT NULL,
    created_at     DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at     DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT forges_name_key UNIQUE (name)
);

-- A worktree agent's forge, by name ('' for none).
ALTER TABLE agents ADD COLUMN forge TEXT NOT NULL DEFAULT '';

-- Forge logins mapped to agents: a review by the login is that agent's act.
CREATE TABLE forge_users (
    forge_id BIGINT NOT NULL REFERENCES forges (id) ON DELETE CASCADE,
    login    TEXT   NOT NULL,
    agent_id BIGINT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    PRIMARY KEY (forge_id, login)
);

-- A task's pull request and what Countersign last told the forge about it: commit is
-- the verified commit it was made for, status what was last set on that commit,
-- moved the last foreign head marked failure, reviews (a JSON array) the review ids
-- already acted on.
CREATE TABLE forge_pulls (
    task_id     BIGINT      PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
    forge_id    BIGINT      NOT NULL REFERENCES forges (id) ON DELETE CASCADE,
    number      BIGINT      NOT NULL,
    url         TEXT        NOT NULL DEFAULT '',
    state       TEXT        NOT NULL DEFAULT 'open',
    commit_sha  TEXT        NOT NULL DEFAULT '',
    status      TEXT        NOT NULL DEFAULT '',
    status_note TEXT        NOT NULL DEFAULT '',
    moved       TEXT        NOT NULL DEFAULT '',
    reviews     TEXT        NOT NULL DEFAULT '[]',
    merge_sha   TEXT        NOT NULL DEFAULT '',
    error       TEXT        NOT NULL DEFAULT '',
    updated_at  DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX forge_pulls_number_idx ON forge_pulls (forge_id, number);
CREATE INDEX forge_pulls_open_idx ON forge_pulls (state, task_id);

-- Webhook deliveries received, by the forge's delivery id: a replay is refused.
CREATE TABLE forge_deliveries (
    forge_id    BIGINT      NOT NULL REFERENCES forges (id) ON DELETE CASCADE,
    delivery    TEXT        NOT NULL,
    received_at DATETIME    NOT NULL,
    PRIMARY KEY (forge_id, delivery)
);
