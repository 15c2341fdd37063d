-- The search index's pending list (words waiting to be merged into the GIN index) holds at most 256 kB,
-- not the server's default 4 MB: every search scans the pending list, and the pages a merge frees stay in
-- the index (re-used by later merges, never returned), about 45 bytes per message of a 100k-message store.
-- The merges are smaller and more frequent; indexing costs the same (upkeep indexes in batches).
ALTER INDEX entry_words_gin SET (gin_pending_list_limit = 256);
