-- Placeholder on the checkpoints branch only: the workspace branch ships this number (W1); on merge,
-- keep that branch's file and drop this one.
SELECT 1;
