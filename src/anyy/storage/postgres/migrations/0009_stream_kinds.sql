-- What a kept piece of a running pass's stream is (issue 17, D4): 'text' (its answer) or 'thinking' (its
-- reasoning as streamed). Rows kept before this were all answer text.
ALTER TABLE stream_texts ADD COLUMN kind TEXT NOT NULL DEFAULT 'text';
