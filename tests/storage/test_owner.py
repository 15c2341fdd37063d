"""The store owner: one thread owns the connection; callers on an event loop hand it units of work."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from anyy.domain.entries import EntryKind, NewEntry
from anyy.domain.errors import NotFound
from anyy.domain.sessions import NewSession
from anyy.storage.owner import StoreOwner
from anyy.storage.sqlite import SqliteStore


def make_owner(tmp_path: Path) -> StoreOwner[SqliteStore]:
    owner = StoreOwner(lambda: SqliteStore(tmp_path / "state.db", profile="t"), idle_delay=0.001)
    owner.start()
    return owner


def test_every_call_runs_on_the_owner_thread(tmp_path: Path) -> None:
    owner = make_owner(tmp_path)

    async def scenario() -> set[int]:
        threads = await asyncio.gather(*(owner.call(lambda _s: threading.get_ident()) for _ in range(20)))
        return set(threads)

    try:
        threads = asyncio.run(scenario())
    finally:
        owner.close()
    assert len(threads) == 1
    assert threading.get_ident() not in threads


def test_errors_reach_the_caller_and_the_owner_goes_on(tmp_path: Path) -> None:
    owner = make_owner(tmp_path)

    async def scenario() -> str:
        with pytest.raises(NotFound):
            await owner.call(lambda s: s.get_session("ses_unknown"))
        created = await owner.call(lambda s: s.create_session(NewSession(title="after the error")))
        return created.title

    try:
        assert asyncio.run(scenario()) == "after the error"
    finally:
        owner.close()


def test_upkeep_indexes_messages_while_idle(tmp_path: Path) -> None:
    owner = make_owner(tmp_path)

    async def scenario() -> int:
        session = await owner.call(lambda s: s.create_session(NewSession()))
        for i in range(30):
            entry = NewEntry(kind=EntryKind.USER, text=f"message {i} zanzibar")

            def append(store: SqliteStore, e: NewEntry = entry) -> object:
                return store.append_entries(session.id, [e])

            await owner.call(append)
        await owner.wait_idle()
        # Everything was indexed while idle: an explicit step has nothing left to do.
        step = await owner.call(lambda s: s.maintain())
        return step.indexed

    try:
        assert asyncio.run(scenario()) == 0
    finally:
        owner.close()


def test_opening_errors_surface_at_start(tmp_path: Path) -> None:
    missing_dir = tmp_path / "no" / "such" / "dir" / "state.db"
    owner = StoreOwner(lambda: SqliteStore(missing_dir, profile="t"))
    with pytest.raises(Exception, match="unable to open"):
        owner.start()


def test_close_finishes_queued_work(tmp_path: Path) -> None:
    owner = make_owner(tmp_path)
    futures = [owner.submit(lambda s: s.create_session(NewSession())) for _ in range(10)]
    owner.close()
    assert all(f.result().id.startswith("ses_") for f in futures)
    reopened = SqliteStore(tmp_path / "state.db", profile="t")
    try:
        assert len(reopened.list_sessions(limit=50).items) == 10
    finally:
        reopened.close()
