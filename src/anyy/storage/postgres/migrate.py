"""Numbered plain-SQL migrations for the PostgreSQL store, applied in order at open.

The same rules as the SQLite store's (``0002_what_it_does.sql``, never an edit of a shipped one). Two
Gateways opening the same database at once are serialised by a transaction-scoped advisory lock, so each
migration runs exactly once.
"""

from __future__ import annotations

import re
import time
from importlib import resources
from typing import Any

import psycopg

from anyy.storage.store_urls import StoreSettingError

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
# Any fixed number: the key of the advisory lock that serialises migrations of one database.
_LOCK_KEY = 0x616E7979


def available() -> list[tuple[int, str, str]]:
    """``(number, name, sql)`` of every shipped migration, in order."""
    found = []
    for item in resources.files("anyy.storage.postgres").joinpath("migrations").iterdir():
        match = _NAME.match(item.name)
        if match:
            found.append((int(match.group(1)), item.name, item.read_text(encoding="utf-8")))
    found.sort()
    numbers = [number for number, _, _ in found]
    if numbers != list(range(1, len(found) + 1)):
        raise RuntimeError(f"migrations must be numbered 1..n without gaps, found {numbers}")
    return found


def apply(conn: psycopg.Connection[Any], *, where: str) -> list[str]:
    """Bring the schema up to date; returns the names applied. ``where`` names the database for errors."""
    pending = available()
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        # Not waiting for this commit's flush is safe: the schema is made whole or not at all, and the first
        # durable commit after it (nothing is acknowledged before one) flushes it too, WAL being in order.
        conn.execute("SET LOCAL synchronous_commit = off")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(number INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at DOUBLE PRECISION NOT NULL)"
        )
        done = {row[0] for row in conn.execute("SELECT number FROM schema_migrations")}
        newest = max(done, default=0)
        if newest > len(pending):
            raise StoreSettingError(
                f"the database {where} has schema {newest}, newer than this anyy knows ({len(pending)}): "
                "upgrade anyy, or point [store] url (or ANYY_STORE_URL) at another database"
            )
        applied = []
        for number, name, sql in pending:
            if number in done:
                continue
            conn.execute(sql.encode())  # several statements: sent as one simple query
            conn.execute(
                "INSERT INTO schema_migrations (number, name, applied_at) VALUES (%s, %s, %s)",
                (number, name, time.time()),
            )
            applied.append(name)
    return applied
