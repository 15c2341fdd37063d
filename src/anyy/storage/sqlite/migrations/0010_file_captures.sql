-- File captures (W2): a workspace's state in the profile's capture store (captures.git), joined to the
-- entry it belongs to. A row is written only after its commit and the objects it names are on disk, so
-- a row is always a restore point that exists. Rows of entries upkeep reclaimed are no longer reached.
CREATE TABLE file_captures (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id   TEXT    NOT NULL,
    entry_id     INTEGER NOT NULL,
    execution_id TEXT    NOT NULL DEFAULT '',
    kind         TEXT    NOT NULL,
    commit_id    TEXT    NOT NULL,
    workspace    TEXT    NOT NULL,
    created_at   REAL    NOT NULL
);
CREATE INDEX file_captures_entry ON file_captures (entry_id);
CREATE INDEX file_captures_execution ON file_captures (execution_id) WHERE execution_id <> '';
