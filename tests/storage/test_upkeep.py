"""Upkeep of the SQLite store that needs a clock: uploads nothing references are removed after a grace."""

from __future__ import annotations

from pathlib import Path

import pytest

from anyy.domain.errors import NotFound
from anyy.domain.queue import NewSubmission
from anyy.domain.sessions import NewSession
from anyy.storage.rules import UNUSED_OBJECT_GRACE
from anyy.storage.sqlite import SqliteStore


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
