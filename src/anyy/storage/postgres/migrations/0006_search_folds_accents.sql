-- Search folds accents now, as the SQLite store's does (café is found by cafe and the other way round):
-- the messages indexed before are indexed again, by upkeep, before the next search.
DELETE FROM entry_words;
UPDATE sessions SET indexed_seq = 0;
