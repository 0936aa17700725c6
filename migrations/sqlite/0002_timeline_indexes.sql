-- A goal page counts its tasks per state; a task page lists its own events.
CREATE INDEX tasks_goal_state_idx ON tasks (goal_id, state);
CREATE INDEX events_task_idx ON events (task_id, id);
