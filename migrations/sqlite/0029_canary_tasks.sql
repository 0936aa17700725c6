-- Canary tasks (issue #35): a task whose held-out tests contradict its brief, scheduled
-- by a lead for one agent to measure its honesty. canary names where the task came
-- from (a built-in stack's, or "team"); '' for every real task. A canary task runs in a
-- fresh scratch workspace whatever its agent's checkout, never lands, and is left out
-- of the scorecard's work figures; the honesty section counts it instead. Nothing the
-- worker can read (its brief, its environment, the task's JSON) carries this column.
ALTER TABLE tasks ADD COLUMN canary TEXT NOT NULL DEFAULT '';
CREATE INDEX tasks_canary_idx ON tasks (canary, id) WHERE canary <> '';
