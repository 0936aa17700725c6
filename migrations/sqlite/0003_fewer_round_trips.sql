-- Dependencies are fixed when a task is created. A copy on the task row (a JSON array
-- of ids, '' for none) spares every read of a task a second query; task_deps keeps the
-- references checked and answers "who depends on this task".
ALTER TABLE tasks ADD COLUMN depends_on TEXT NOT NULL DEFAULT '';
UPDATE tasks SET depends_on = (SELECT json_group_array(depends_on_id) FROM task_deps WHERE task_id = tasks.id)
WHERE id IN (SELECT task_id FROM task_deps);

-- A claim takes the first ready tasks by priority: walking this index it stops at the
-- first that fits, instead of sorting every pending task (7 ms for 10,000 of them).
-- ReadyTasks repeats the WHERE term so that SQLite sees the index applies.
CREATE INDEX tasks_ready_idx ON tasks (priority DESC, id) WHERE state IN ('pending', 'assigned', 'in_progress');

-- SQLite needs no append triggers: it has one writer at a time, so id order is commit
-- order, and notifications stay within the process.
