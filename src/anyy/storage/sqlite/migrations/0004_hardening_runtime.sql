-- What a running pass has said and done so far, kept as it comes, so that a crash keeps it (issue 17).
-- Both are dropped when the pass is recorded or the execution ends; recovery records them.

-- The text streamed so far, in pieces (D4).
CREATE TABLE stream_texts (
    exe_num  INTEGER NOT NULL,
    seq      INTEGER NOT NULL,
    provider TEXT    NOT NULL,
    model    TEXT    NOT NULL,
    text     TEXT    NOT NULL,
    saved_at REAL    NOT NULL,
    PRIMARY KEY (exe_num, seq)
) WITHOUT ROWID;

-- Tool calls, recorded before they start, with their process group and its start time once it runs, and
-- what they printed so far (D3).
CREATE TABLE tool_runs (
    exe_num   INTEGER NOT NULL,
    call_id   TEXT    NOT NULL,
    seq       INTEGER NOT NULL,
    name      TEXT    NOT NULL,
    arguments TEXT    NOT NULL,
    pid       INTEGER,
    started   INTEGER,
    output    TEXT    NOT NULL DEFAULT '',
    done      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (exe_num, call_id)
) WITHOUT ROWID;

-- A client's key for a send it may retry (D8): a second send with the same key gets the first one's
-- submission back instead of queueing the message twice.
ALTER TABLE submissions ADD COLUMN idem_key TEXT;
CREATE UNIQUE INDEX submissions_idem_key ON submissions (session_num, idem_key) WHERE idem_key IS NOT NULL;
