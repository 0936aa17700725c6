-- What a verified attempt of a task without a git workspace left: the files it added
-- or changed, kept by the runner (path, size, SHA-256 of each, and whether bounds left
-- some out), as a JSON object; empty for every other attempt.
ALTER TABLE attempts ADD COLUMN deliverable TEXT NOT NULL DEFAULT '';
