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
