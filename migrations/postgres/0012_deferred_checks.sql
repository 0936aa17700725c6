-- A goal's deferred checks (JSON: status, the criteria, who runs them, their results
-- and output); empty when it has none.
ALTER TABLE goals ADD COLUMN deferred TEXT NOT NULL DEFAULT '';
