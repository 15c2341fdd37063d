-- A session's workspace (SPEC W1): the absolute, canonical directory its tools work in, chosen when it is
-- created. NULL for sessions made before workspaces: those run in the Gateway's working directory.
ALTER TABLE sessions ADD COLUMN workspace TEXT;
-- The workspace a schedule's runs get (NULL: the profile's default workspace).
ALTER TABLE schedules ADD COLUMN workspace TEXT;
