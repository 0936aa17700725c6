-- Scorecards read an agent's (or every agent's) attempts started in a window, and
-- the blocked inbox items made in it, without scanning the tables.
CREATE INDEX attempts_agent_started_idx ON attempts (agent_id, started_at);
CREATE INDEX attempts_started_idx ON attempts (started_at);
CREATE INDEX inbox_items_kind_created_idx ON inbox_items (kind, created_at);
