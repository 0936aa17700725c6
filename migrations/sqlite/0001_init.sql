-- 0001_init: the whole initial schema of Countersign (SQLite).
-- Foreign keys are enforced (the store opens SQLite with foreign_keys on).
-- Applied in one transaction by models/store, which records version 1 in
-- schema_migrations afterwards. Never edit an applied file: add a new one.

CREATE TABLE schema_migrations (
    version    BIGINT      PRIMARY KEY,
    applied_at DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- Agents. roles is a JSON array of role names (text): agents are few and always read
-- whole, so nothing needs to query a role in SQL.
CREATE TABLE agents (
    id            INTEGER     PRIMARY KEY AUTOINCREMENT,
    name          TEXT        NOT NULL,
    kind          TEXT        NOT NULL,
    roles         TEXT        NOT NULL DEFAULT '[]',
    command       TEXT        NOT NULL DEFAULT '',
    workdir       TEXT        NOT NULL DEFAULT '',
    worktree      BOOLEAN     NOT NULL DEFAULT 0,
    concurrency   INTEGER     NOT NULL DEFAULT 1,
    disabled      BOOLEAN     NOT NULL DEFAULT 0,
    password_hash TEXT        NOT NULL DEFAULT '',
    created_at    DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at    DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT agents_name_key UNIQUE (name)
);

-- Bearer tokens: only the SHA-256 of the secret is stored.
CREATE TABLE tokens (
    id           INTEGER     PRIMARY KEY AUTOINCREMENT,
    agent_id     BIGINT      NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    name         TEXT        NOT NULL DEFAULT '',
    hash         TEXT        NOT NULL,
    created_at   DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    last_used_at DATETIME   ,
    CONSTRAINT tokens_hash_key UNIQUE (hash)
);
CREATE INDEX tokens_agent_idx ON tokens (agent_id);

-- Dashboard sessions: id is the SHA-256 of the cookie secret.
CREATE TABLE sessions (
    id         TEXT        PRIMARY KEY,
    agent_id   BIGINT      NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    csrf       TEXT        NOT NULL,
    created_at DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    expires_at DATETIME    NOT NULL
);
CREATE INDEX sessions_expires_idx ON sessions (expires_at);
CREATE INDEX sessions_agent_idx ON sessions (agent_id);

CREATE TABLE goals (
    id          INTEGER     PRIMARY KEY AUTOINCREMENT,
    title       TEXT        NOT NULL,
    description TEXT        NOT NULL DEFAULT '',
    project     TEXT        NOT NULL DEFAULT '',
    state       TEXT        NOT NULL,
    creator_id  BIGINT      REFERENCES agents (id),
    verifier_id BIGINT      REFERENCES agents (id),
    notes       TEXT        NOT NULL DEFAULT '',
    verified_at DATETIME   ,
    created_at  DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at  DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX goals_state_idx ON goals (state, id);
CREATE INDEX goals_project_idx ON goals (project, id);

-- Workflow templates: one row per version; steps is a JSON array.
CREATE TABLE templates (
    id          INTEGER     PRIMARY KEY AUTOINCREMENT,
    name        TEXT        NOT NULL,
    version     INTEGER     NOT NULL,
    description TEXT        NOT NULL DEFAULT '',
    steps       TEXT        NOT NULL DEFAULT '[]',
    creator_id  BIGINT      REFERENCES agents (id),
    created_at  DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT templates_name_version_key UNIQUE (name, version)
);

-- Workflow runs: params is a JSON object of strings.
CREATE TABLE runs (
    id               INTEGER     PRIMARY KEY AUTOINCREMENT,
    goal_id          BIGINT      NOT NULL REFERENCES goals (id),
    template_name    TEXT        NOT NULL,
    template_version INTEGER     NOT NULL,
    params           TEXT        NOT NULL DEFAULT '{}',
    creator_id       BIGINT      REFERENCES agents (id),
    created_at       DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    FOREIGN KEY (template_name, template_version) REFERENCES templates (name, version)
);
CREATE INDEX runs_goal_idx ON runs (goal_id);

-- Tasks: contract is JSON text; dependencies live in task_deps; lease_owner and
-- lease_until belong to the runner that claimed the task.
CREATE TABLE tasks (
    id            INTEGER     PRIMARY KEY AUTOINCREMENT,
    goal_id       BIGINT      REFERENCES goals (id),
    run_id        BIGINT      REFERENCES runs (id),
    step_num      INTEGER     NOT NULL DEFAULT 0,
    title         TEXT        NOT NULL,
    brief         TEXT        NOT NULL DEFAULT '',
    role          TEXT        NOT NULL,
    state         TEXT        NOT NULL,
    priority      INTEGER     NOT NULL DEFAULT 0,
    approve       TEXT        NOT NULL DEFAULT '',
    verify        TEXT        NOT NULL DEFAULT '',
    contract      TEXT        NOT NULL DEFAULT '{}',
    creator_id    BIGINT      REFERENCES agents (id),
    assignee_id   BIGINT      REFERENCES agents (id),
    builder_id    BIGINT      REFERENCES agents (id),
    approver_id   BIGINT      REFERENCES agents (id),
    verifier_id   BIGINT      REFERENCES agents (id),
    summary       TEXT        NOT NULL DEFAULT '',
    files_changed TEXT        NOT NULL DEFAULT '',
    notes         TEXT        NOT NULL DEFAULT '',
    reason        TEXT        NOT NULL DEFAULT '',
    rejections    INTEGER     NOT NULL DEFAULT 0,
    attempts_used INTEGER     NOT NULL DEFAULT 0,
    override      BOOLEAN     NOT NULL DEFAULT 0,
    lease_owner   TEXT        NOT NULL DEFAULT '',
    lease_until   DATETIME   ,
    created_at    DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at    DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    verified_at   DATETIME   
);
CREATE INDEX tasks_state_idx ON tasks (state, id);
CREATE INDEX tasks_goal_idx ON tasks (goal_id, id);
CREATE INDEX tasks_assignee_idx ON tasks (assignee_id, id);
CREATE INDEX tasks_role_state_idx ON tasks (role, state, id);
CREATE INDEX tasks_state_lease_idx ON tasks (state, lease_until);
CREATE INDEX tasks_run_idx ON tasks (run_id, step_num);

CREATE TABLE task_deps (
    task_id       BIGINT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    depends_on_id BIGINT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    PRIMARY KEY (task_id, depends_on_id),
    CONSTRAINT task_deps_not_self CHECK (task_id <> depends_on_id)
);
CREATE INDEX task_deps_depends_on_idx ON task_deps (depends_on_id);

-- Attempts: checks and criteria are JSON arrays.
CREATE TABLE attempts (
    id          INTEGER     PRIMARY KEY AUTOINCREMENT,
    task_id     BIGINT      NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    number      INTEGER     NOT NULL,
    agent_id    BIGINT      NOT NULL REFERENCES agents (id),
    runner_id   TEXT        NOT NULL DEFAULT '',
    outcome     TEXT        NOT NULL,
    stage       TEXT        NOT NULL DEFAULT '',
    diagnosis   TEXT        NOT NULL DEFAULT '',
    checks      TEXT        NOT NULL DEFAULT '[]',
    criteria    TEXT        NOT NULL DEFAULT '[]',
    exit_code   INTEGER     NOT NULL DEFAULT 0,
    output_tail TEXT        NOT NULL DEFAULT '',
    output_hash TEXT        NOT NULL DEFAULT '',
    log_path    TEXT        NOT NULL DEFAULT '',
    brief       TEXT        NOT NULL DEFAULT '',
    started_at  DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    finished_at DATETIME   
);
CREATE INDEX attempts_task_idx ON attempts (task_id, number, id);

-- Inbox items: payload is JSON text.
CREATE TABLE inbox_items (
    id          INTEGER     PRIMARY KEY AUTOINCREMENT,
    kind        TEXT        NOT NULL,
    task_id     BIGINT      NOT NULL REFERENCES tasks (id),
    goal_id     BIGINT      REFERENCES goals (id),
    title       TEXT        NOT NULL DEFAULT '',
    payload     TEXT        NOT NULL DEFAULT '',
    resolved    BOOLEAN     NOT NULL DEFAULT 0,
    resolved_by BIGINT      REFERENCES agents (id),
    resolution  TEXT        NOT NULL DEFAULT '',
    created_at  DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    resolved_at DATETIME   
);
CREATE INDEX inbox_items_resolved_kind_idx ON inbox_items (resolved, kind, id);
CREATE INDEX inbox_items_task_idx ON inbox_items (task_id);

-- Events: an append-only log. SQLite has one writer at a time, so ids are committed in
-- increasing order and a reader replaying "id > n" never misses one; AUTOINCREMENT
-- never reuses an id. No foreign keys: a log must never refuse an entry.
CREATE TABLE events (
    id         INTEGER     PRIMARY KEY AUTOINCREMENT,
    type       TEXT        NOT NULL,
    task_id    BIGINT,
    goal_id    BIGINT,
    actor_id   BIGINT,
    data       TEXT        NOT NULL DEFAULT '',
    created_at DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- Ledger outbox: posted in id order, exactly once.
CREATE TABLE ledger_entries (
    id           INTEGER     PRIMARY KEY AUTOINCREMENT,
    type         TEXT        NOT NULL,
    task_id      BIGINT,
    goal_id      BIGINT,
    message      BLOB        NOT NULL,
    payload      BLOB,
    status       TEXT        NOT NULL DEFAULT 'pending',
    attempts     INTEGER     NOT NULL DEFAULT 0,
    last_error   TEXT        NOT NULL DEFAULT '',
    override     BOOLEAN     NOT NULL DEFAULT 0,
    created_at   DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    tx_id        TEXT        NOT NULL DEFAULT '',
    tx_bytes     BLOB,
    sequence     BIGINT      NOT NULL DEFAULT 0,
    running_hash TEXT        NOT NULL DEFAULT '',
    consensus_at DATETIME   ,
    posted_at    DATETIME   
);
CREATE INDEX ledger_entries_status_idx ON ledger_entries (status, id);

-- Project rules: a single row (id = 1) holding the rules as JSON.
CREATE TABLE project_rules (
    id         INTEGER     PRIMARY KEY CHECK (id = 1),
    rules      TEXT        NOT NULL,
    updated_at DATETIME    NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- The runner's own identity: the party that checks work and that no agent can be.
INSERT INTO agents (name, kind, roles, concurrency) VALUES ('runner', 'system', '[]', 1);
