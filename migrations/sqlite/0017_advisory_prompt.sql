-- The advisory prompt: an open inbox item of kind advisory_prompt holds its task
-- undelegated, and every claim asks, for each ready candidate, whether one exists.
-- This index answers that probe from the index alone.
CREATE INDEX inbox_items_task_kind_open_idx ON inbox_items (task_id, kind, resolved);
