"""SQLite the way both programs use it: one connection in autocommit mode (transactions are explicit), the
same pragmas (WAL, foreign keys, a busy timeout), numbered migrations recorded in ``schema_migrations``,
and one ``transaction`` helper that nested calls join.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

PRAGMAS = (
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = NORMAL",
    "PRAGMA foreign_keys = ON",
    "PRAGMA busy_timeout = 10000",
)

Migration = tuple[int, str]  # (version, SQL script: statements separated by ';')
RowFactory = Callable[[sqlite3.Cursor, tuple[Any, ...]], Any]


def dict_row(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    """A row as ``{column: value}``."""
    return {col[0]: value for col, value in zip(cursor.description, row, strict=True)}


def connect(
    path: Path,
    *,
    pragmas: Sequence[str] = PRAGMAS,
    row_factory: RowFactory | None = dict_row,
    migrations: Sequence[Migration] = (),
) -> sqlite3.Connection:
    """Open (creating its directory) a database in autocommit mode, set the pragmas, apply the migrations."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.row_factory = row_factory
    for pragma in pragmas:
        conn.execute(pragma)
    if migrations:
        migrate(conn, migrations)
    return conn


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on any exception); inside an open transaction, joins it."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def migrate(conn: sqlite3.Connection, migrations: Sequence[Migration]) -> list[int]:
    """Apply the migrations not yet recorded, in order, in one transaction; the versions applied now."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL)")
    applied: list[int] = []
    with transaction(conn):
        done = {_first(row) for row in conn.execute("SELECT version FROM schema_migrations")}
        for version, script in sorted(migrations):
            if version in done:
                continue
            for statement in script.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute("INSERT INTO schema_migrations VALUES (?, ?)", (version, time.time()))
            applied.append(version)
    return applied


def schema_versions(conn: sqlite3.Connection) -> list[int]:
    cursor = conn.execute("SELECT version FROM schema_migrations ORDER BY version")
    return [int(_first(row)) for row in cursor]


def _first(row: Any) -> Any:
    """The first column of a row, whatever the connection's row factory made of it."""
    return next(iter(row.values())) if isinstance(row, dict) else row[0]
