-- session.send may create its session with the first message (U1): a retry with the same idempotency key
-- (D8) finds that message, whichever session holds it, instead of creating a second session.
CREATE INDEX submissions_idem_key_any ON submissions (idem_key) WHERE idem_key IS NOT NULL;
