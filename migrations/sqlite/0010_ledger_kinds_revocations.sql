-- How a task.complete was verified (runner, advisory, override; empty for other
-- types), and the entry a task.revoked or goal.revoked withdraws, so that a task's or
-- goal's chain (complete, revoked, complete) is read by its id.
ALTER TABLE ledger_entries ADD COLUMN kind TEXT NOT NULL DEFAULT '';
ALTER TABLE ledger_entries ADD COLUMN revokes_id INTEGER REFERENCES ledger_entries (id);
CREATE INDEX ledger_entries_task_idx ON ledger_entries (task_id, id) WHERE task_id IS NOT NULL;
CREATE INDEX ledger_entries_goal_idx ON ledger_entries (goal_id, id) WHERE goal_id IS NOT NULL;
-- Entries written before kinds existed: an override says so; the others keep an
-- empty kind, because their messages did not say how they were verified.
UPDATE ledger_entries SET kind = 'override' WHERE type = 'task.complete' AND override;
