-- The PostgreSQL store's schema: the same model as the SQLite store's first migration (sessions own an
-- entry id range, entries are immutable tree nodes in linear runs, the head is stored), with search in
-- its own table (filled by upkeep) and objects' bytes inside the database, so several hosts share them.

-- Sessions. `num` numbers the session's entry id range (entry id = num << 30 | seq) and is never reused:
-- entries of a deleted session may live on while a fork still reaches them. Later migrations may add
-- columns for a Gateway's ownership of a session (owner, epoch, lease) without touching these.
CREATE TABLE sessions (
    num            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id             TEXT    NOT NULL UNIQUE,
    kind           TEXT    NOT NULL,
    title          TEXT    NOT NULL DEFAULT '',
    role           TEXT    NOT NULL DEFAULT 'default',
    provider       TEXT    NOT NULL DEFAULT '',
    model          TEXT    NOT NULL DEFAULT '',
    effort         TEXT    NOT NULL DEFAULT '',
    tools          TEXT    NOT NULL DEFAULT '{}',
    steering_mode  TEXT    NOT NULL DEFAULT 'one-at-a-time',
    follow_up_mode TEXT    NOT NULL DEFAULT 'one-at-a-time',
    goal           TEXT,
    -- NULL: the last entry this session appended; 0: before the first entry; else the chosen entry.
    head           BIGINT,
    indexed_seq    BIGINT  NOT NULL DEFAULT 0,
    forked_from    TEXT,
    fork_point     BIGINT,
    status         TEXT    NOT NULL DEFAULT 'active',
    created_at     DOUBLE PRECISION NOT NULL,
    updated_at     DOUBLE PRECISION NOT NULL
);
CREATE INDEX sessions_by_recency ON sessions (kind, updated_at DESC, num DESC) WHERE status = 'active';
CREATE INDEX sessions_all_by_recency ON sessions (updated_at DESC, num DESC) WHERE status = 'active';
CREATE INDEX sessions_head ON sessions (head) WHERE head > 0;
CREATE INDEX sessions_fork_point ON sessions (fork_point) WHERE fork_point IS NOT NULL;

-- Entries: immutable tree nodes. `run` is the first id of the linear run the entry belongs to.
-- `text` is NULL when the body lives in `objects` (large, or holding NUL characters PostgreSQL text
-- cannot).
CREATE TABLE entries (
    id         BIGINT PRIMARY KEY,
    parent     BIGINT,
    run        BIGINT  NOT NULL,
    kind       SMALLINT NOT NULL,
    text       TEXT,
    data       TEXT,
    obj        TEXT,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX entries_compactions ON entries (id) WHERE kind = 7;
CREATE INDEX entries_objects ON entries (id) WHERE obj IS NOT NULL;

CREATE TABLE cross_links (
    child  BIGINT PRIMARY KEY,
    parent BIGINT NOT NULL
);
CREATE INDEX cross_links_parent ON cross_links (parent);

-- The search index: one row per indexed message, written by upkeep (never on the append path).
CREATE TABLE entry_words (
    id    BIGINT PRIMARY KEY,
    words TSVECTOR NOT NULL
);
CREATE INDEX entry_words_gin ON entry_words USING GIN (words);

-- Content-addressed objects with their bytes, and who references them.
CREATE TABLE objects (
    hash       TEXT PRIMARY KEY,
    size       BIGINT  NOT NULL,
    media_type TEXT    NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    body       BYTEA   NOT NULL
);
-- holder: an entry id (> 0) or minus a submission's num (< 0).
CREATE TABLE object_refs (
    holder BIGINT NOT NULL,
    obj    TEXT   NOT NULL,
    PRIMARY KEY (holder, obj)
);
CREATE INDEX object_refs_obj ON object_refs (obj);

CREATE TABLE submissions (
    num          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id           TEXT    NOT NULL UNIQUE,
    session_num  BIGINT  NOT NULL REFERENCES sessions (num),
    kind         TEXT    NOT NULL,
    text         TEXT    NOT NULL,
    attachments  TEXT    NOT NULL DEFAULT '[]',
    state        TEXT    NOT NULL,
    position     BIGINT  NOT NULL,
    version      BIGINT  NOT NULL DEFAULT 1,
    execution_id TEXT,
    entry_id     BIGINT,
    error        TEXT,
    created_at   DOUBLE PRECISION NOT NULL,
    updated_at   DOUBLE PRECISION NOT NULL
);
CREATE INDEX submissions_queue ON submissions (session_num, state, position);
CREATE INDEX submissions_execution ON submissions (execution_id) WHERE execution_id IS NOT NULL;

CREATE TABLE executions (
    num         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id          TEXT    NOT NULL UNIQUE,
    session_num BIGINT  NOT NULL REFERENCES sessions (num),
    state       TEXT    NOT NULL,
    passes      BIGINT  NOT NULL DEFAULT 0,
    error       TEXT,
    note        TEXT,
    started_at  DOUBLE PRECISION NOT NULL,
    ended_at    DOUBLE PRECISION
);
CREATE INDEX executions_active ON executions (state) WHERE state IN ('running', 'retry_wait', 'suspended');
CREATE INDEX executions_session ON executions (session_num, num);

CREATE TABLE gc_queue (
    session_num BIGINT PRIMARY KEY
);

-- The common append (one entry, its body in the row, no attachment) in one statement, so that it costs one
-- round trip and one commit like any single insert. The same rules as the store's general path
-- (entries.py, EntriesPart.append_prepared), which every other append takes: 30 is entry_ids.SEQ_BITS.
-- The session row is locked first, in a statement of its own, so what is read next is of after any writer
-- that held it. Returns no row for a missing session; ok = false with the head when the expected head
-- (p_check) moved, or with r_id = -1 when the session is full.
CREATE FUNCTION anyy_append_one(
    p_session TEXT, p_kind SMALLINT, p_text TEXT, p_data TEXT, p_now DOUBLE PRECISION,
    p_check BOOLEAN, p_expected BIGINT
) RETURNS TABLE (r_num BIGINT, r_id BIGINT, r_parent BIGINT, r_ok BOOLEAN)
LANGUAGE plpgsql AS $$
DECLARE
    v_num BIGINT; v_kind TEXT; v_stored BIGINT; v_updated DOUBLE PRECISION;
    v_base BIGINT; v_last BIGINT; v_run BIGINT; v_head BIGINT; v_id BIGINT; v_top BIGINT;
BEGIN
    SELECT s.num, s.kind, s.head, s.updated_at INTO v_num, v_kind, v_stored, v_updated
        FROM sessions s WHERE s.id = p_session AND s.status = 'active' FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    v_base := v_num << 30;
    SELECT e.id, e.run INTO v_last, v_run FROM entries e
        WHERE e.id = (SELECT max(x.id) FROM entries x WHERE x.id BETWEEN v_base AND v_base | 1073741823);
    v_head := CASE WHEN v_stored IS NULL THEN v_last WHEN v_stored = 0 THEN NULL ELSE v_stored END;
    IF p_check AND v_head IS DISTINCT FROM p_expected THEN
        RETURN QUERY SELECT v_num, NULL::BIGINT, v_head, false;
        RETURN;
    END IF;
    IF v_last = (v_base | 1073741823) THEN
        RETURN QUERY SELECT v_num, -1::BIGINT, v_head, false;
        RETURN;
    END IF;
    v_id := coalesce(v_last + 1, v_base | 1);
    IF v_head IS NULL OR v_head <> v_id - 1 OR (v_id & 1073741823) = 1 THEN
        v_run := v_id;
        IF v_head IS NOT NULL AND (v_head >> 30) <> v_num THEN
            INSERT INTO cross_links (child, parent) VALUES (v_id, v_head);
        END IF;
    END IF;
    INSERT INTO entries (id, parent, run, kind, text, data, obj, created_at)
        VALUES (v_id, v_head, v_run, p_kind, p_text, p_data, NULL, p_now);
    SELECT o.num INTO v_top FROM sessions o WHERE o.status = 'active' AND o.kind = v_kind
        ORDER BY o.updated_at DESC, o.num DESC LIMIT 1;
    IF v_stored IS NOT NULL OR v_top IS DISTINCT FROM v_num OR p_now - v_updated >= 1.0 OR p_now < v_updated THEN
        UPDATE sessions SET head = NULL, updated_at = p_now WHERE num = v_num;
    END IF;
    RETURN QUERY SELECT v_num, v_id, v_head, true;
END
$$;
