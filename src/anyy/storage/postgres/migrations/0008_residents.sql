-- Residents (SPEC K3): a long-lived Background session and its triggers. `body` holds the resident as
-- JSON (instructions, heartbeat, webhook secret's hash, paused, last and next wake); `name` is unique.
CREATE TABLE residents (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
-- One row per heartbeat that fired, committed before the wake: a wake time is claimed once, whatever
-- restarts or Gateways sharing the store.
CREATE TABLE resident_wakes (
    resident_id TEXT NOT NULL,
    wake_at     DOUBLE PRECISION NOT NULL,
    claimed_at  DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (resident_id, wake_at)
);
