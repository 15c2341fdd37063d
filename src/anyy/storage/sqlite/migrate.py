"""Numbered plain-SQL migrations, applied in order at open and recorded in ``schema_migrations``."""

from __future__ import annotations

import re
import sqlite3
import time
from importlib import resources

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def available() -> list[tuple[int, str, str]]:
    """``(number, name, sql)`` of every shipped migration, in order."""
    found = []
    for item in resources.files("anyy.storage.sqlite").joinpath("migrations").iterdir():
        match = _NAME.match(item.name)
        if match:
            found.append((int(match.group(1)), item.name, item.read_text(encoding="utf-8")))
    found.sort()
    numbers = [number for number, _, _ in found]
    if numbers != list(range(1, len(found) + 1)):
        raise RuntimeError(f"migrations must be numbered 1..n without gaps, found {numbers}")
    return found


def apply(conn: sqlite3.Connection) -> list[str]:
    """Bring the schema up to date; returns the names applied. Safe against a concurrent opener."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations "
        "(number INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
    )
    pending = available()
    done = {row[0] for row in conn.execute("SELECT number FROM schema_migrations")}
    if all(number in done for number, _, _ in pending):
        newest = max(done, default=0)
        if newest > len(pending):
            raise RuntimeError(
                f"this state.db has schema {newest}, newer than this anyy knows ({len(pending)}): upgrade anyy"
            )
        return []
    applied = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        done = {row[0] for row in conn.execute("SELECT number FROM schema_migrations")}
        for number, name, sql in pending:
            if number in done:
                continue
            for statement in _statements(sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (number, name, applied_at) VALUES (?, ?, ?)",
                (number, name, time.time()),
            )
            applied.append(name)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return applied


def _statements(sql: str) -> list[str]:
    """Split a migration file into statements (``sqlite3.complete_statement`` knows where they end)."""
    statements, current = [], ""
    for line in sql.splitlines(keepends=True):
        if not current and (not line.strip() or line.lstrip().startswith("--")):
            continue
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    if current.strip():
        statements.append(current.strip())
    return statements
