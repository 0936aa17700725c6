-- Nothing to do: SQLite has one writer at a time, so event ids commit in id order
-- (the PostgreSQL migration of this number replaces its append lock).
SELECT 1;
