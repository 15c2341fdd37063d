"""The SQLite backend: stdlib ``sqlite3``, one connection owned by one thread, WAL."""

from anyy.storage.sqlite.store import SqliteStore

__all__ = ["SqliteStore"]
