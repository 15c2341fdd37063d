-- The text a running pass has streamed so far, kept in pieces as it comes (D4): a crash then keeps the
-- answer up to the last piece. Cleared when the pass is recorded or the execution ends.
CREATE TABLE stream_texts (
    exe_num  BIGINT  NOT NULL,
    seq      INTEGER NOT NULL,
    provider TEXT    NOT NULL,
    model    TEXT    NOT NULL,
    text     TEXT    NOT NULL,
    saved_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (exe_num, seq)
);
