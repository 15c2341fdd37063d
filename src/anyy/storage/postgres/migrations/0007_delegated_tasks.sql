-- Delegated tasks (SPEC K2): one row per child Background session a parent's `delegate` call started,
-- linking it to that call; its state, and the child's answer once it finished. The parent's call gets
-- its result once every row of the call is finished or cancelled; rows survive restarts.
CREATE TABLE delegated_tasks (
    child_session_id    TEXT    PRIMARY KEY,
    parent_session_id   TEXT    NOT NULL,
    parent_execution_id TEXT    NOT NULL,
    parent_call_id      TEXT    NOT NULL,
    position            INTEGER NOT NULL,
    brief               TEXT    NOT NULL,
    depth               INTEGER NOT NULL,
    state               TEXT    NOT NULL DEFAULT 'waiting',
    result              TEXT    NOT NULL DEFAULT '',
    is_error            INTEGER NOT NULL DEFAULT 0,
    restarts            INTEGER NOT NULL DEFAULT 0,
    -- 1 once the parent's call got the result (or ended without it): the task needs nothing more.
    delivered           INTEGER NOT NULL DEFAULT 0,
    created_at          DOUBLE PRECISION NOT NULL,
    updated_at          DOUBLE PRECISION NOT NULL
);
CREATE INDEX delegated_tasks_by_parent ON delegated_tasks (parent_session_id, parent_call_id, position);
CREATE INDEX delegated_tasks_open ON delegated_tasks (delivered) WHERE delivered = 0;
