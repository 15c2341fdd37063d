-- Sessions. `num` numbers the session's entry id range (entry id = num << 30 | seq) and is never
-- reused (AUTOINCREMENT): entries of a deleted session may live on while a fork still reaches them.
CREATE TABLE sessions (
    num            INTEGER PRIMARY KEY AUTOINCREMENT,
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
    goal           TEXT,                         -- JSON {text, state} or NULL
    -- The current leaf, durable (never only in memory): NULL means "the last entry this session
    -- appended" (so an ordinary append writes nothing here), 0 means "before the first entry",
    -- anything else is the entry id that navigation or a fork chose.
    head           INTEGER,
    indexed_seq    INTEGER NOT NULL DEFAULT 0,   -- entries up to this seq are in the search index
    forked_from    TEXT,
    fork_point     INTEGER,                      -- the entry it was forked at: its path stays reachable
    status         TEXT    NOT NULL DEFAULT 'active',   -- active | deleted (kept while entries remain)
    created_at     REAL    NOT NULL,
    updated_at     REAL    NOT NULL
);
CREATE INDEX sessions_by_recency ON sessions (kind, updated_at DESC, num DESC) WHERE status = 'active';
CREATE INDEX sessions_all_by_recency ON sessions (updated_at DESC, num DESC) WHERE status = 'active';
CREATE INDEX sessions_head ON sessions (head) WHERE head > 0;
CREATE INDEX sessions_fork_point ON sessions (fork_point) WHERE fork_point IS NOT NULL;

-- Entries: immutable tree nodes. `run` is the first id of the linear run the entry belongs to.
CREATE TABLE entries (
    id         INTEGER PRIMARY KEY,
    parent     INTEGER,
    run        INTEGER NOT NULL,
    kind       INTEGER NOT NULL,
    text       TEXT,                 -- NULL when the body lives in objects/ (see obj)
    data       TEXT,                 -- JSON payload of the kind, NULL when empty
    obj        TEXT,                 -- content hash of a large body
    created_at REAL    NOT NULL
);
CREATE INDEX entries_compactions ON entries (id) WHERE kind = 7;
CREATE INDEX entries_objects ON entries (id) WHERE obj IS NOT NULL;

-- Links whose child and parent were appended by different sessions (forks, navigation into a
-- forked-from path). They let a delete find what other sessions still reach without a tree walk.
CREATE TABLE cross_links (
    child  INTEGER PRIMARY KEY,
    parent INTEGER NOT NULL
);
CREATE INDEX cross_links_parent ON cross_links (parent);

-- Full-text index over what people and the agent said; content stays in `entries` (no copy).
CREATE VIRTUAL TABLE entries_fts USING fts5 (
    text, content = 'entries', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2'
);

-- Content-addressed objects (large bodies, attachments) and who references them.
CREATE TABLE objects (
    hash       TEXT PRIMARY KEY,
    size       INTEGER NOT NULL,
    media_type TEXT    NOT NULL,
    created_at REAL    NOT NULL
) WITHOUT ROWID;
-- holder: an entry id (> 0) or minus a submission's num (< 0).
CREATE TABLE object_refs (
    holder INTEGER NOT NULL,
    obj    TEXT    NOT NULL,
    PRIMARY KEY (holder, obj)
) WITHOUT ROWID;
CREATE INDEX object_refs_obj ON object_refs (obj);

-- Submissions: the durable queue items, each with its own outcome forever.
CREATE TABLE submissions (
    num          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT    NOT NULL UNIQUE,
    session_num  INTEGER NOT NULL REFERENCES sessions (num),
    kind         TEXT    NOT NULL,
    text         TEXT    NOT NULL,
    attachments  TEXT    NOT NULL DEFAULT '[]',
    state        TEXT    NOT NULL,
    position     INTEGER NOT NULL,
    version      INTEGER NOT NULL DEFAULT 1,
    execution_id TEXT,
    entry_id     INTEGER,
    error        TEXT,
    created_at   REAL    NOT NULL,
    updated_at   REAL    NOT NULL
);
CREATE INDEX submissions_queue ON submissions (session_num, state, position);
CREATE INDEX submissions_execution ON submissions (execution_id) WHERE execution_id IS NOT NULL;

-- Executions: one run of the agent answering submissions, made of passes.
CREATE TABLE executions (
    num         INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT    NOT NULL UNIQUE,
    session_num INTEGER NOT NULL REFERENCES sessions (num),
    state       TEXT    NOT NULL,
    passes      INTEGER NOT NULL DEFAULT 0,
    error       TEXT,
    note        TEXT,
    started_at  REAL    NOT NULL,
    ended_at    REAL
);
CREATE INDEX executions_active ON executions (state) WHERE state IN ('running', 'retry_wait', 'suspended');
CREATE INDEX executions_session ON executions (session_num, num);

-- Deleted sessions whose entries are still to be reclaimed.
CREATE TABLE gc_queue (
    session_num INTEGER PRIMARY KEY
);
