"""A fork costs the same however long the conversation is (F2: O(1), nothing is copied or walked).

Measured as work, not time: SQLite's progress handler, set on the store's connection, counts the virtual
machine instructions every statement of ``fork_session`` executes. A fork that walked or copied the path
would grow with it; a few hundred instructions of slack allow for one more level of a B-tree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from anyy.domain.entries import EntryKind, NewEntry
from anyy.domain.sessions import NewSession
from anyy.storage.sqlite import SqliteStore

SHORT, LONG = 10, 3000
SLACK = 300  # instructions: index depth, not path length


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore(tmp_path / "state.db", profile="test")
    try:
        yield opened
    finally:
        opened.close()


def conversation(store: SqliteStore, entries: int) -> tuple[str, list[int]]:
    session = store.create_session(NewSession(title=f"{entries} entries"))
    ids: list[int] = []
    for start in range(0, entries, 500):
        batch = [
            NewEntry(kind=EntryKind.USER if n % 2 == 0 else EntryKind.ASSISTANT, text=f"message {n}")
            for n in range(start, min(start + 500, entries))
        ]
        ids += [e.id for e in store.append_entries(session.id, batch)]
    return session.id, ids


def instructions(store: SqliteStore, action: Callable[[], Any]) -> int:
    """SQLite VM instructions ``action`` made the store's connection execute."""
    count = 0

    def tick() -> int:
        nonlocal count
        count += 1
        return 0  # 0: go on

    store.conn.set_progress_handler(tick, 1)
    try:
        action()
    finally:
        store.conn.set_progress_handler(None, 1)
    return count


def test_f2_b_fork_work_does_not_grow_with_the_path(store: SqliteStore) -> None:
    short_id, short = conversation(store, SHORT)
    long_id, long = conversation(store, LONG)
    store.fork_session(short_id)  # warm the statement cache: both measures below run the same way
    at_head = (
        instructions(store, lambda: store.fork_session(short_id)),
        instructions(store, lambda: store.fork_session(long_id)),
    )
    inside = (
        instructions(store, lambda: store.fork_session(short_id, short[SHORT // 2])),
        instructions(store, lambda: store.fork_session(long_id, long[LONG // 2])),
    )
    # A fork of a fork, at an entry its parent inherited: still no walk back along the path.
    long_fork = store.fork_session(long_id).id
    short_fork = store.fork_session(short_id).id
    inherited = (
        instructions(store, lambda: store.fork_session(short_fork, short[1])),
        instructions(store, lambda: store.fork_session(long_fork, long[1])),
    )
    for small, large in (at_head, inside, inherited):
        assert small > 0
        assert large <= small + SLACK, f"forking a {LONG}-entry path took {large} instructions, {SHORT}: {small}"
    assert [e.text for e in store.path(store.fork_session(long_fork, long[1]).id)] == ["message 0", "message 1"]
