-- Events are appended without a global lock (issue #34); readers see only a prefix of
-- ids that can no longer grow a gap. Ids are still drawn from events_id_seq when a row
-- is inserted, so transactions commit them out of order; a reader that returned id 11
-- while 10 is still uncommitted would skip 10 forever. The rule that prevents it:
--
-- * A writer has its transaction id before it draws an event id (the statement
--   trigger below), and the rows get a later transaction id after every id is drawn:
--   the store inserts them in a subtransaction, ids first (sorted), so the row's xmin
--   is a subtransaction id assigned after its id was drawn.
-- * So whoever drew a smaller id had a transaction id below the row's xmin. Once no
--   transaction below that xmin is running, every smaller id has committed (and is
--   visible) or never will: countersign_event_horizon returns the largest such id.
--   (A row is visible only when its transaction committed, so its xmin is below the
--   snapshot's xmax; it is unsafe when it is at or above the oldest running one.)
--
-- The price: a long transaction of this database that has written anything holds
-- newer events back from readers until it ends. ledger_entries keep their append lock (0003): they must
-- stay a hash chain in id order, and only transactions that verify a task write them.
DROP TRIGGER events_append_lock ON events;

CREATE FUNCTION countersign_xid_first() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_current_xact_id();
	RETURN NULL;
END
$$;
CREATE TRIGGER events_xid_first BEFORE INSERT ON events
	FOR EACH STATEMENT EXECUTE FUNCTION countersign_xid_first();

-- countersign_event_horizon(after) is the largest event id above after (after when
-- none) at or below which every id is decided, in the calling statement's snapshot:
-- the newest row whose xmin is not in [m, xmax), m the oldest transaction of this
-- database the snapshot sees running. A row's xmin has 32 bits and is compared modulo
-- 2^32; a row written 2^32 transactions ago and never since could only make the
-- horizon stop one row lower.
--
-- Running transactions of other databases (CREATE DATABASE, another application) are
-- left out: pg_stat_get_activity, read after the snapshot was taken, shows each
-- backend's database beside its transaction id. An id the snapshot lists as running
-- was assigned before it, to a backend that has held its slot since, so it is never
-- shown beside another backend's database. One that ended in between is not shown:
-- it is kept, which can only hold the horizon lower for this call.
CREATE FUNCTION countersign_event_horizon(after BIGINT) RETURNS BIGINT LANGUAGE sql STABLE AS $$
	WITH other AS (
		SELECT a.backend_xid::text::bigint AS x FROM pg_stat_get_activity(NULL) a
		WHERE a.backend_xid IS NOT NULL
		  AND a.datid IS DISTINCT FROM (SELECT oid FROM pg_database WHERE datname = current_database())
	), oldest AS (
		SELECT min(r::text::bigint) AS m,
		       pg_snapshot_xmax(pg_current_snapshot())::text::bigint - min(r::text::bigint) AS w
		FROM pg_snapshot_xip(pg_current_snapshot()) r
		WHERE r::text::bigint % 4294967296 NOT IN (SELECT x FROM other)
	)
	SELECT COALESCE((
		SELECT e.id FROM events e, oldest
		WHERE e.id > after
		  AND (oldest.m IS NULL
		       OR ((e.xmin::text::bigint - oldest.m) % 4294967296 + 4294967296) % 4294967296 >= oldest.w)
		ORDER BY e.id DESC LIMIT 1), after)
$$;

-- countersign_insert_events inserts events in the way the horizon relies on, and
-- returns their ids in the arrays' order, in one round trip. The block with an
-- EXCEPTION clause is a subtransaction: its first row written gives it its id, after
-- every event id is drawn (the Sort under the insert reads all its input first). The
-- transaction's own id was assigned before the ids were drawn (events_xid_first).
CREATE FUNCTION countersign_insert_events(types TEXT[], task_ids BIGINT[], goal_ids BIGINT[], actor_ids BIGINT[],
	agent_ids BIGINT[], datas TEXT[], created TIMESTAMPTZ[]) RETURNS SETOF BIGINT LANGUAGE plpgsql AS $$
BEGIN
	BEGIN
		RETURN QUERY WITH ins AS (
			INSERT INTO events (id, type, task_id, goal_id, actor_id, agent_id, data, created_at)
			SELECT q.id, q.type, q.task_id, q.goal_id, q.actor_id, q.agent_id, q.data, q.created_at FROM (
				SELECT nextval('events_id_seq') AS id, u.*
				FROM unnest(types, task_ids, goal_ids, actor_ids, agent_ids, datas, created)
					WITH ORDINALITY AS u(type, task_id, goal_id, actor_id, agent_id, data, created_at, n)
				ORDER BY u.n
			) q ORDER BY q.id RETURNING events.id)
		SELECT ins.id FROM ins ORDER BY ins.id;
	EXCEPTION WHEN OTHERS THEN
		RAISE;
	END;
END
$$;
