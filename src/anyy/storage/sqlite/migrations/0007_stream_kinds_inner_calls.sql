-- What a kept piece of a running pass's stream is (issue 17, D4): 'text' (its answer) or 'thinking' (its
-- reasoning as streamed). Rows kept before this were all answer text.
ALTER TABLE stream_texts ADD COLUMN kind TEXT NOT NULL DEFAULT 'text';

-- The call a tool call was made from (D3): a Codemode script's inner call that starts a program is recorded
-- with its process group, under the run_script call's id; '' for a call of the model's.
ALTER TABLE tool_runs ADD COLUMN parent TEXT NOT NULL DEFAULT '';
