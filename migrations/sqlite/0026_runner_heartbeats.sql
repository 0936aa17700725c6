-- Runners' heartbeats: one row per process (instance) of a runner id. A runner whose
-- every instance fell silent (alive_until passed: no heartbeat for three intervals)
-- has its leases ended by the next heartbeat of any other runner, long before they
-- expire; a runner restarted under the same id ends its dead predecessor's leases at
-- once when the predecessor's process lock (owner, on host) proves it dead.
CREATE TABLE runners (
    runner_id   TEXT        NOT NULL,
    instance    TEXT        NOT NULL,
    host        TEXT        NOT NULL DEFAULT '',
    owner       TEXT        NOT NULL DEFAULT '',
    alive_until DATETIME NOT NULL,
    started_at  DATETIME NOT NULL,
    PRIMARY KEY (runner_id, instance)
);
