"""D9: the WAL gives its space back after a full disk, without a restart. On a real (small) tmpfs."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from anyy.domain.entries import EntryKind, NewEntry
from anyy.domain.errors import StorageFull
from anyy.domain.sessions import NewSession
from anyy.storage.sqlite import SqliteStore
from tests.fakes.disks import small_disk

MIB = 1024 * 1024


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with small_disk(tmp_path / "disk", "16m") as mount_point:
        yield mount_point


def test_d9_the_wal_shrinks_after_a_full_disk_without_a_restart(disk: Path) -> None:
    store = SqliteStore(disk / "state.db", profile="small")
    session = store.create_session(NewSession(title="on a small disk"))
    (disk / "other-files").write_bytes(b"\0" * (4 * MIB))  # what else the disk holds
    # A reader keeps its snapshot meanwhile (a backup, a search): checkpoints cannot finish, the WAL
    # grows until the disk is full.
    reader = sqlite3.connect(disk / "state.db")
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM entries").fetchone()
    with pytest.raises(StorageFull):  # noqa: PT012 - appends until the disk is full
        for i in range(100_000):
            store.append_entries(session.id, [NewEntry(kind=EntryKind.USER, text=f"{i} " + "x" * 3000)])
    reader.close()
    wal = disk / "state.db-wal"
    assert wal.stat().st_size > 6 * MIB
    (disk / "other-files").unlink()  # space comes back
    while store.maintain().more:
        pass
    assert wal.stat().st_size <= 4 * MIB, "the WAL kept the space the full disk gave it"
    kept = len(store.path(session.id))
    store.append_entries(session.id, [NewEntry(kind=EntryKind.USER, text="after")])
    assert len(store.path(session.id)) == kept + 1
    store.close()
