-- Money (Y1, Y2). One row per model call that reported its usage, written in the transaction of the
-- assistant entry it produced: tokens and cost in nano-dollars (NULL: unpriced, never 0 by default), so
-- that every total is an exact sum over rows. Rows stay when upkeep reclaims the entry (what was spent
-- stays spent).
CREATE TABLE model_calls (
    entry_id    BIGINT PRIMARY KEY,
    session_id  TEXT    NOT NULL,
    created_at  DOUBLE PRECISION   NOT NULL,
    day         TEXT    NOT NULL,   -- UTC, YYYY-MM-DD
    provider    TEXT    NOT NULL,
    model       TEXT    NOT NULL,
    input       BIGINT  NOT NULL DEFAULT 0,
    output      BIGINT  NOT NULL DEFAULT 0,
    cache_read  BIGINT  NOT NULL DEFAULT 0,
    cache_write BIGINT  NOT NULL DEFAULT 0,
    reasoning   BIGINT  NOT NULL DEFAULT 0,
    cost        BIGINT
);
CREATE INDEX model_calls_time ON model_calls (created_at);
CREATE INDEX model_calls_session ON model_calls (session_id, created_at);

-- Budgets the user set on one session, schedule or resident (Y2), by scope "session:ID", "schedule:ID",
-- "resident:ID"; in nano-dollars. The profile's own limits are in config.toml.
CREATE TABLE budgets (
    scope       TEXT    PRIMARY KEY,
    limit_nano  BIGINT  NOT NULL,
    updated_at  DOUBLE PRECISION   NOT NULL
);

-- What calls in flight may still spend (Y2): a hold per budget scope, taken in the same transaction as the
-- check that allows the call (serialised by a transaction-level advisory lock), so that concurrent calls of
-- several Gateways cannot all pass a limit; released when the call's cost is recorded, ignored once old.
CREATE TABLE budget_holds (
    hold_id     TEXT    NOT NULL,
    scope       TEXT    NOT NULL,
    amount      BIGINT  NOT NULL,
    created_at  DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (hold_id, scope)
);
CREATE INDEX budget_holds_scope ON budget_holds (scope, created_at);

-- Running totals of the priced calls per budget scope and period (Y2), added to in the transaction that
-- writes each call's row, so the check before a call reads one row per budget (not a sum over calls):
-- scope "all" (the profile) per "d:YYYY-MM-DD" and "m:YYYY-MM", "session:ROOT" (no period),
-- "schedule:ID" and "resident:ID" per day.
CREATE TABLE budget_spend (
    scope   TEXT    NOT NULL,
    period  TEXT    NOT NULL,
    spent   BIGINT NOT NULL,
    PRIMARY KEY (scope, period)
);
