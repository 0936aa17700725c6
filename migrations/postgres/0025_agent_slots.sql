-- Per-agent concurrency as rows: one row per unit of a worker agent's concurrency
-- (slot 0 .. concurrency-1). A claim takes a free slot of the agent it hands a task to
-- with FOR UPDATE SKIP LOCKED, so claims by several runners proceed side by side and
-- never lock the agent rows (which made one claim at a time run across the fleet). A
-- slot names the task it holds and the runner whose lease holds it: it is free when it
-- names no task, or when that task no longer holds that lease (ended, expired, taken
-- over), which the claim reads from the task row itself (see models/store/slots.go).
CREATE TABLE agent_slots (
    agent_id    BIGINT      NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    slot        INTEGER     NOT NULL,
    task_id     BIGINT,
    runner_id   TEXT        NOT NULL DEFAULT '',
    PRIMARY KEY (agent_id, slot)
);
CREATE INDEX agent_slots_task_idx ON agent_slots (task_id) WHERE task_id IS NOT NULL;

-- The tasks leased now keep their slots (a surplus beyond an agent's concurrency stays
-- until it is freed; claims only take slots below the concurrency); then every enabled
-- worker gets the rest of its slots.
INSERT INTO agent_slots (agent_id, slot, task_id, runner_id)
SELECT t.assignee_id, row_number() OVER (PARTITION BY t.assignee_id ORDER BY t.id) - 1, t.id, t.lease_owner
FROM tasks t JOIN agents a ON a.id = t.assignee_id
WHERE t.state = 'in_progress' AND t.lease_owner <> '' AND a.kind = 'worker';
INSERT INTO agent_slots (agent_id, slot)
SELECT a.id, g.n FROM agents a CROSS JOIN LATERAL generate_series(0, GREATEST(a.concurrency, 1) - 1) AS g(n)
WHERE a.kind = 'worker' AND NOT a.disabled
ON CONFLICT DO NOTHING;

-- A lease ends in many places (a settle, a release, a rejection, a question, a
-- cancel, a block...), all of them writes of the task row: the slot is cleared here,
-- when lease_owner goes from a runner to none, so that the next claim finds it free at
-- once. SKIP LOCKED: a slot row a claim holds is left as it is rather than waited for
-- (waiting could deadlock); naming a task whose lease ended, it is free all the same.
CREATE FUNCTION countersign_free_slot() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE agent_slots SET task_id = NULL, runner_id = ''
	WHERE (agent_id, slot) IN (SELECT s.agent_id, s.slot FROM agent_slots s WHERE s.task_id = NEW.id FOR UPDATE SKIP LOCKED);
	RETURN NULL;
END
$$;
CREATE TRIGGER tasks_lease_ended AFTER UPDATE OF lease_owner ON tasks
	FOR EACH ROW WHEN (OLD.lease_owner <> '' AND NEW.lease_owner = '')
	EXECUTE FUNCTION countersign_free_slot();

