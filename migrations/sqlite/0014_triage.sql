-- What the triage model decided once a task's attempts ran out on a work failure
-- (JSON; empty: never triaged), and the one extra attempt a triage gave.
ALTER TABLE tasks ADD COLUMN triage TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN triage BOOLEAN NOT NULL DEFAULT 0;
