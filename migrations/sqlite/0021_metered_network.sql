-- The egress proxy's log of an attempt's connections (JSON models.NetworkLog; empty:
-- no log), and, beside the usage JSON, where the usage came from ('metered': the
-- model gateway counted it; '': the worker reported it) and whether the worker's
-- report differed from the meter beyond tolerance: columns, so that model spend per
-- agent per day and the scorecards' mismatch counts are sums over stored attempts.
ALTER TABLE attempts ADD COLUMN network TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN usage_source TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN usage_mismatch BOOLEAN NOT NULL DEFAULT 0;
-- Attempts stored before the columns: read them from the usage JSON (Go writes it
-- without spaces; the worker's nested report never carries a source or a mismatch).
UPDATE attempts SET usage_source = 'metered' WHERE usage LIKE '%"source":"metered"%';
UPDATE attempts SET usage_mismatch = 1 WHERE usage LIKE '%"mismatch":"%';
CREATE INDEX attempts_source_started_idx ON attempts (usage_source, started_at);
