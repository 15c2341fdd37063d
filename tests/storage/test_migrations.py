"""Numbered SQL migrations: applied once, in order, recorded; a newer database is refused clearly."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from anyy.storage.sqlite import SqliteStore
from anyy.storage.sqlite.migrate import available


def test_migrations_apply_once_and_are_recorded(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    first = SqliteStore(db)
    assert first.applied_migrations == [name for _, name, _ in available()]
    first.close()
    again = SqliteStore(db)
    assert again.applied_migrations == []
    again.close()
    with sqlite3.connect(db) as conn:
        recorded = [row[0] for row in conn.execute("SELECT name FROM schema_migrations ORDER BY number")]
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert recorded == [name for _, name, _ in available()]


def test_a_database_from_a_newer_anyy_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    SqliteStore(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO schema_migrations VALUES (999, '0999_future.sql', 0)")
    with pytest.raises(RuntimeError, match=r"newer than this anyy knows.*upgrade anyy"):
        SqliteStore(db)


def test_later_openers_find_the_schema_ready(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    stores = [SqliteStore(db) for _ in range(3)]
    assert sum(len(s.applied_migrations) for s in stores) == len(available())
    for s in stores:
        s.close()
