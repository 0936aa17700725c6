-- 0004_access_hygiene (SQLite): token expiry, revocation and attempt scope; the
-- per-account login lock; per-agent sandbox settings; an agent's history; the task a
-- task was spawned from. Applied in one transaction, like every migration.

-- Tokens expire (90 days unless the issuer says otherwise; tokens issued before this
-- migration get 90 days from now), can be revoked, and an attempt token is confined to
-- one task (task_id) for one attempt. last_used_at is written at most once a minute.
ALTER TABLE tokens ADD COLUMN expires_at DATETIME;
ALTER TABLE tokens ADD COLUMN revoked_at DATETIME;
ALTER TABLE tokens ADD COLUMN task_id BIGINT REFERENCES tasks (id) ON DELETE CASCADE;
ALTER TABLE tokens ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;
UPDATE tokens SET expires_at = strftime('%Y-%m-%d %H:%M:%f+00:00', 'now', '+90 days');
CREATE INDEX tokens_task_idx ON tokens (task_id) WHERE task_id IS NOT NULL;

-- Failed dashboard sign-ins per account name (any name: a lock must not tell whether
-- the account exists), shared by every server process and kept across restarts.
CREATE TABLE login_failures (
    name            TEXT        PRIMARY KEY,
    failures        INTEGER     NOT NULL DEFAULT 0,
    last_failure_at DATETIME    NOT NULL,
    locked_until    DATETIME
);

-- What a worker's confined processes may read, write and connect to besides their
-- workspace: JSON arrays of absolute paths and of TCP ports, set by an admin.
ALTER TABLE agents ADD COLUMN sandbox_read TEXT NOT NULL DEFAULT '[]';
ALTER TABLE agents ADD COLUMN sandbox_write TEXT NOT NULL DEFAULT '[]';
ALTER TABLE agents ADD COLUMN sandbox_connect TEXT NOT NULL DEFAULT '[]';
ALTER TABLE agents ADD COLUMN sandbox_allow_unix BOOLEAN NOT NULL DEFAULT 0;

-- The agent an event is about (created, changed, its tokens), for the agent's history.
-- Earlier agent and token events name their agent in data.agent.
ALTER TABLE events ADD COLUMN agent_id BIGINT;
UPDATE events SET agent_id = (SELECT a.id FROM agents a WHERE a.name = json_extract(events.data, '$.agent'))
WHERE (type LIKE 'agent.%' OR type LIKE 'token.%') AND json_valid(data);
CREATE INDEX events_agent_idx ON events (agent_id, id) WHERE agent_id IS NOT NULL;

-- A task created through an attempt token names the task of that attempt: the token
-- may act on the tasks it spawned, and on no other.
ALTER TABLE tasks ADD COLUMN parent_task_id BIGINT REFERENCES tasks (id);
