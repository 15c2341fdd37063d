-- A send to a session another Gateway holds (SPEC P4, P5): `wake` is set in the transaction that queues the
-- item, cleared when the owner acknowledges the work hint or when a Gateway claims the session to run it.
-- Left set, the owner never heard of the item (it died first): once its lease runs out, a survivor's
-- heartbeat claims the session and runs its queue, without waiting for another client request.
ALTER TABLE sessions ADD COLUMN wake BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX sessions_wake ON sessions (num) WHERE wake;

-- `anyy gateway stop --all` / `--id`: a Gateway asked to stop (it may run on another host) stops cleanly at
-- its next heartbeat.
ALTER TABLE gateways ADD COLUMN stop_requested BOOLEAN NOT NULL DEFAULT false;
