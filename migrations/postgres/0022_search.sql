-- Search (models.SearchService): trigram indexes over the titles and briefs of tasks
-- and the titles and descriptions of goals, so that ILIKE '%text%' of three or more
-- characters is answered from the index rather than by reading every row. pg_trgm
-- ships with PostgreSQL and is a trusted extension (a database owner may create it);
-- where it cannot be created the migration goes on without the indexes and search
-- still answers, by scanning.
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
    CREATE INDEX tasks_search_idx ON tasks USING gin ((title || ' ' || brief) gin_trgm_ops);
    CREATE INDEX goals_search_idx ON goals USING gin ((title || ' ' || description) gin_trgm_ops);
EXCEPTION WHEN insufficient_privilege OR undefined_file OR feature_not_supported THEN
    RAISE NOTICE 'search: pg_trgm is not available (%); search scans instead', SQLERRM;
END
$$;

-- The task and goal lists' sorts (models.TaskFilter.Sort, GoalFilter.Sort): newest
-- update or creation first, the id breaking ties, read from an index rather than by
-- sorting every row.
CREATE INDEX tasks_updated_idx ON tasks (updated_at, id);
CREATE INDEX tasks_created_idx ON tasks (created_at, id);
CREATE INDEX goals_updated_idx ON goals (updated_at, id);
CREATE INDEX goals_created_idx ON goals (created_at, id);
