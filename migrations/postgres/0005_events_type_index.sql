-- The rules and template pages list their change history (rules.changed,
-- template.changed events): by type, newest first, without scanning the feed.
CREATE INDEX events_type_idx ON events (type, id);
