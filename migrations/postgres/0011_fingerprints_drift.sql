-- What a verification covered (JSON: the workspace, each changed file's hash, the
-- output's path) and, while a recheck finds it changed, the drift (JSON: when, which
-- paths). Empty: none.
ALTER TABLE tasks ADD COLUMN fingerprint TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN drift TEXT NOT NULL DEFAULT '';
