-- Schedules (SPEC K1). `timing` is the JSON of anyy.domain.schedules.Timing; `tools` a JSON list or NULL (the
-- profile's); `session_id` a fixed target session or NULL (a new Background session per run).
CREATE TABLE schedules (
    id          TEXT    PRIMARY KEY,
    name        TEXT    NOT NULL UNIQUE,
    timing      TEXT    NOT NULL,
    prompt      TEXT    NOT NULL,
    role        TEXT    NOT NULL,
    provider    TEXT    NOT NULL,
    model       TEXT    NOT NULL,
    tools       TEXT,
    session_id  TEXT,
    paused      INTEGER NOT NULL,
    considered  DOUBLE PRECISION NOT NULL,
    next_at     DOUBLE PRECISION,
    created_at  DOUBLE PRECISION NOT NULL,
    updated_at  DOUBLE PRECISION NOT NULL
);
-- The timer reads the earliest next fire time and the due schedules, not every schedule.
CREATE INDEX schedules_next ON schedules (next_at) WHERE paused = 0 AND next_at IS NOT NULL;
-- One row per run, written in the same transaction as the run's session and queued prompt, before anything
-- runs: the primary key is the claim that makes a run happen once (across restarts, and across Gateways
-- sharing a database). Its outcome is its submission's state.
CREATE TABLE schedule_runs (
    schedule_id   TEXT NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    scheduled_for DOUBLE PRECISION NOT NULL,
    claimed_at    DOUBLE PRECISION NOT NULL,
    session_id    TEXT,
    submission_id TEXT,
    error         TEXT,
    PRIMARY KEY (schedule_id, scheduled_for)
);
CREATE INDEX schedule_runs_submission ON schedule_runs (submission_id);
