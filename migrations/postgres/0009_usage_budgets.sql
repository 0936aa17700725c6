-- What each attempt used (tokens, cost, turns, model, session; JSON, empty when
-- nothing is known), with its cost and token total as columns so that budgets are
-- sums over stored attempts; and what a running attempt reserved of its budgets.
ALTER TABLE attempts ADD COLUMN usage TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN cost_usd DOUBLE PRECISION;
ALTER TABLE attempts ADD COLUMN tokens BIGINT;
ALTER TABLE attempts ADD COLUMN reserved_usd DOUBLE PRECISION;
ALTER TABLE attempts ADD COLUMN reserved_tokens BIGINT;
-- Budgets (JSON {max_cost_usd, max_tokens}; empty: none) of goals and, per day, of
-- agents; the environment variables an agent's processes get from the runner's, by
-- name (a JSON array; values are never stored).
ALTER TABLE goals ADD COLUMN budget TEXT NOT NULL DEFAULT '';
ALTER TABLE agents ADD COLUMN daily_budget TEXT NOT NULL DEFAULT '';
ALTER TABLE agents ADD COLUMN pass_env TEXT NOT NULL DEFAULT '[]';
