"""Upkeep of the SQLite store that needs a clock: uploads nothing references are removed after a grace."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from anyy.domain.entries import EntryKind, NewEntry
from anyy.domain.errors import NotFound
from anyy.domain.queue import NewSubmission
from anyy.domain.sessions import NewSession
from anyy.storage.rules import UNUSED_OBJECT_GRACE
from anyy.storage.sqlite import SqliteStore
from anyy.storage.sqlite.upkeep import KEEP_FREE_PAGES


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a3_unused_uploads_are_removed_after_a_grace_period_and_used_ones_stay(tmp_path: Path) -> None:
    clock = Clock()
    store = SqliteStore(tmp_path / "state.db", clock=clock)
    session = store.create_session(NewSession())
    unused = store.put_object(b"a file the user picked, then never sent", media_type="text/plain")
    used = store.put_object(b"a file the user sent", media_type="text/plain")
    store.add_submission(
        session.id,
        NewSubmission(text="see attached", attachments=[{"object": used.hash, "name": "f.txt"}]),  # type: ignore[list-item]
    )
    store.maintain()
    assert store.read_object(unused.hash)  # within the grace period: kept
    clock.now += UNUSED_OBJECT_GRACE + 3600
    store.maintain()
    with pytest.raises(NotFound):
        store.read_object(unused.hash)
    assert store.read_object(used.hash) == b"a file the user sent"
    store.close()


def _free_pages(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("PRAGMA freelist_count").fetchone()[0])
    finally:
        conn.close()


def test_f3_space_of_a_deleted_session_comes_back_in_whole_steps(tmp_path: Path) -> None:
    """A step of upkeep gives back up to its budget of free pages, not one page (the pragma stepped once)."""
    db = tmp_path / "state.db"
    store = SqliteStore(db)
    session = store.create_session(NewSession())
    body = "a long enough line of text to fill pages quickly " * 40
    store.append_entries(session.id, [NewEntry(kind=EntryKind.USER, text=f"{i} {body}") for i in range(3000)])
    while store.maintain().more:
        pass
    store.delete_session(session.id)
    drops: list[int] = []
    for _ in range(10_000):
        before = _free_pages(db)
        more = store.maintain().more
        drops.append(before - _free_pages(db))
        if not more:
            break
    assert not more, "upkeep never finished"
    assert max(drops) > 100, f"no step gave back more than {max(drops)} page(s): {drops[:20]}"
    assert _free_pages(db) <= KEEP_FREE_PAGES
    store.close()
