-- A minion task's pilot task: the task whose agent spawned it (set with parent_task_id
-- when a worker creates a task with its attempt token, or given explicitly). Its pilot
-- may submit it for review but never verify it (rule pilot_not_verifier).
ALTER TABLE tasks ADD COLUMN spawned_by BIGINT REFERENCES tasks (id);
