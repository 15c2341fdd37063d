-- Several Gateways on one database (SPEC P3–P6): each Gateway process registers itself, a session's work
-- is run by the Gateway holding its lease, and every write of that work is fenced on (owner, epoch).

CREATE TABLE gateways (
    id            TEXT PRIMARY KEY,
    address       TEXT NOT NULL DEFAULT '',
    pid           INTEGER NOT NULL,
    host          TEXT NOT NULL,
    lease_seconds DOUBLE PRECISION NOT NULL,
    started       TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    last_seen     TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
);

-- owner: the Gateway holding the lease (NULL: nobody; any Gateway may claim). epoch: incremented on every
-- claim, so a writer that lost its lease is refused even if it holds the same owner id. lease_until: the
-- server's clock, so hosts' clocks need not agree.
ALTER TABLE sessions
    ADD COLUMN owner TEXT,
    ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN lease_until TIMESTAMPTZ;
CREATE INDEX sessions_owner ON sessions (owner) WHERE owner IS NOT NULL;

-- The epoch an entry was written under (set by the fenced transaction): along a session it never decreases.
ALTER TABLE entries ADD COLUMN epoch BIGINT DEFAULT nullif(current_setting('anyy.epoch', true), '')::bigint;

-- Stops and answers sent through a Gateway that does not own the session, for the owner to apply.
CREATE TABLE session_controls (
    num          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_num  BIGINT NOT NULL,
    kind         TEXT NOT NULL CHECK (kind IN ('stop', 'answer')),
    execution_id TEXT NOT NULL,
    text         TEXT NOT NULL DEFAULT '',
    created      TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX session_controls_session ON session_controls (session_num);
