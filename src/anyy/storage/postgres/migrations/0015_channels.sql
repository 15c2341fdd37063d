-- Channels (SPEC L1-L3). Senders allowed on a channel, with their send rights on one session (removed with
-- it); one-time pairing codes; the platform's read position; inbound messages already handled (by their
-- platform key, so a message delivered again after a kill is recognised); replies recorded before sending.
CREATE TABLE channel_senders (
    channel      TEXT NOT NULL,
    sender       TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    body         TEXT NOT NULL,
    paired_at    DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (channel, sender, session_id)
);
CREATE INDEX channel_senders_session ON channel_senders (session_id);
CREATE TABLE channel_codes (
    channel      TEXT NOT NULL,
    code         TEXT NOT NULL PRIMARY KEY,
    sender       TEXT NOT NULL,
    body         TEXT NOT NULL,
    expires_at   DOUBLE PRECISION NOT NULL
);
CREATE TABLE channel_positions (
    channel      TEXT NOT NULL PRIMARY KEY,
    read_position TEXT NOT NULL
);
CREATE TABLE channel_inbox (
    channel      TEXT NOT NULL,
    key          TEXT NOT NULL,
    answered     INTEGER NOT NULL DEFAULT 0,
    body         TEXT NOT NULL,
    received_at  DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (channel, key)
);
CREATE TABLE channel_outbox (
    channel      TEXT NOT NULL,
    key          TEXT NOT NULL,
    delivered    INTEGER NOT NULL DEFAULT 0,
    body         TEXT NOT NULL,
    created_at   DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (channel, key)
);
