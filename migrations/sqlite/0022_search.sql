-- Search (models.SearchService): trigram full-text indexes over the titles and briefs
-- of tasks and the titles and descriptions of goals, so that a substring of three or
-- more characters is found without reading every row. FTS5's trigram tokenizer
-- matches case-insensitively; the tables hold no copy of the text (content=), and
-- triggers keep them in step with their rows.
CREATE VIRTUAL TABLE tasks_search USING fts5(title, brief, content='tasks', content_rowid='id', tokenize='trigram');
INSERT INTO tasks_search (rowid, title, brief) SELECT id, title, brief FROM tasks;
CREATE TRIGGER tasks_search_ai AFTER INSERT ON tasks BEGIN
    INSERT INTO tasks_search (rowid, title, brief) VALUES (new.id, new.title, new.brief);
END;
CREATE TRIGGER tasks_search_ad AFTER DELETE ON tasks BEGIN
    INSERT INTO tasks_search (tasks_search, rowid, title, brief) VALUES ('delete', old.id, old.title, old.brief);
END;
CREATE TRIGGER tasks_search_au AFTER UPDATE OF title, brief ON tasks BEGIN
    INSERT INTO tasks_search (tasks_search, rowid, title, brief) VALUES ('delete', old.id, old.title, old.brief);
    INSERT INTO tasks_search (rowid, title, brief) VALUES (new.id, new.title, new.brief);
END;

CREATE VIRTUAL TABLE goals_search USING fts5(title, description, content='goals', content_rowid='id', tokenize='trigram');
INSERT INTO goals_search (rowid, title, description) SELECT id, title, description FROM goals;
CREATE TRIGGER goals_search_ai AFTER INSERT ON goals BEGIN
    INSERT INTO goals_search (rowid, title, description) VALUES (new.id, new.title, new.description);
END;
CREATE TRIGGER goals_search_ad AFTER DELETE ON goals BEGIN
    INSERT INTO goals_search (goals_search, rowid, title, description) VALUES ('delete', old.id, old.title, old.description);
END;
CREATE TRIGGER goals_search_au AFTER UPDATE OF title, description ON goals BEGIN
    INSERT INTO goals_search (goals_search, rowid, title, description) VALUES ('delete', old.id, old.title, old.description);
    INSERT INTO goals_search (rowid, title, description) VALUES (new.id, new.title, new.description);
END;

-- The task and goal lists' sorts (models.TaskFilter.Sort, GoalFilter.Sort): newest
-- update or creation first, the id breaking ties, read from an index rather than by
-- sorting every row.
CREATE INDEX tasks_updated_idx ON tasks (updated_at, id);
CREATE INDEX tasks_created_idx ON tasks (created_at, id);
CREATE INDEX goals_updated_idx ON goals (updated_at, id);
CREATE INDEX goals_created_idx ON goals (created_at, id);
