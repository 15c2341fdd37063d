-- Nothing to do here: the SQLite index has folded accents since 0001 (unicode61 remove_diacritics 2).
-- The PostgreSQL store's 0004 makes its search fold them too; the numbers stay the same in both backends.
SELECT 1;
