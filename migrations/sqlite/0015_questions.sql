-- The questions a task's workers asked a person, with their answers (JSON array;
-- empty: none). A task waiting for an answer is in state 'waiting'.
ALTER TABLE tasks ADD COLUMN questions TEXT NOT NULL DEFAULT '';
