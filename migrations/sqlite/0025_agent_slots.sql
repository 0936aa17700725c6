-- Per-agent concurrency as rows: one row per unit of a worker agent's concurrency
-- (slot 0 .. concurrency-1); see the PostgreSQL migration. SQLite has one claimer at
-- a time (the write lock), so nothing is locked; the rows are kept the same way so
-- that both databases run the same claim.
CREATE TABLE agent_slots (
    agent_id    INTEGER     NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    slot        INTEGER     NOT NULL,
    task_id     INTEGER,
    runner_id   TEXT        NOT NULL DEFAULT '',
    PRIMARY KEY (agent_id, slot)
);
CREATE INDEX agent_slots_task_idx ON agent_slots (task_id) WHERE task_id IS NOT NULL;

INSERT INTO agent_slots (agent_id, slot, task_id, runner_id)
SELECT t.assignee_id, row_number() OVER (PARTITION BY t.assignee_id ORDER BY t.id) - 1, t.id, t.lease_owner
FROM tasks t JOIN agents a ON a.id = t.assignee_id
WHERE t.state = 'in_progress' AND t.lease_owner <> '' AND a.kind = 'worker';
WITH RECURSIVE g(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM g WHERE n < 63)
INSERT OR IGNORE INTO agent_slots (agent_id, slot)
SELECT a.id, g.n FROM agents a JOIN g ON g.n < max(a.concurrency, 1)
WHERE a.kind = 'worker' AND NOT a.disabled;

-- A lease ends in many places, all of them writes of the task row: the slot is cleared
-- here, when lease_owner goes from a runner to none, so that the next claim finds it
-- free at once.
CREATE TRIGGER tasks_lease_ended AFTER UPDATE OF lease_owner ON tasks
WHEN OLD.lease_owner <> '' AND NEW.lease_owner = '' BEGIN
	UPDATE agent_slots SET task_id = NULL, runner_id = '' WHERE task_id = NEW.id;
END;

