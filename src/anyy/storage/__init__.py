"""Storage: the ``SessionStore`` protocol and its backends (SQLite now, PostgreSQL to come)."""
