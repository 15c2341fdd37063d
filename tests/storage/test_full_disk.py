"""A full disk is a clear error that loses nothing: on a real (tiny) filesystem, and at SQLite's limit."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from anyy.domain.entries import EntryKind, NewEntry
from anyy.domain.errors import StorageFull
from anyy.domain.sessions import NewSession
from anyy.storage.sqlite import SqliteStore
from tests.fakes.prerequisites import missing


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs: a disk that really fills up. Needs root (mount); skipped elsewhere."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    if os.geteuid() != 0:
        missing("root", "mounting a tiny filesystem needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount_point)], capture_output=True, check=False
    )
    if done.returncode != 0:
        missing("root", f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill(path: Path) -> None:
    """Take every free byte of the filesystem holding ``path``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 4096, 1):
            chunk = b"\0" * size
            try:
                while True:
                    os.write(fd, chunk)
            except OSError:
                pass
    finally:
        os.close(fd)


def test_a3_full_disk_is_a_clear_error_and_loses_nothing(tiny_disk: Path) -> None:
    store = SqliteStore(tiny_disk / "state.db", profile="tiny")
    session = store.create_session(NewSession(title="on a small disk"))
    acknowledged = [
        store.append_entries(session.id, [NewEntry(kind=EntryKind.USER, text=f"kept {i}")])[0].id for i in range(20)
    ]
    fill(tiny_disk / "filler")
    failure: StorageFull | None = None
    for i in range(10_000):
        try:
            store.append_entries(session.id, [NewEntry(kind=EntryKind.USER, text=f"more {i} " + "x" * 2000)])
        except StorageFull as exc:
            failure = exc
            break
    assert failure is not None, "the disk never filled up"
    assert "no space left for profile 'tiny'" in str(failure)
    assert "Free some disk space" in str(failure)
    with pytest.raises(StorageFull):
        store.append_entries(session.id, [NewEntry(kind=EntryKind.ASSISTANT, text="y" * 100_000)])  # an object
    assert not list((tiny_disk / "objects").rglob("*.tmp")), "a partial object file was left behind"
    path_ids = [entry.id for entry in store.path(session.id)]
    assert path_ids[: len(acknowledged)] == acknowledged
    # Space comes back: the same store goes on, and every acknowledged entry survives a reopen.
    (tiny_disk / "filler").unlink()
    store.append_entries(session.id, [NewEntry(kind=EntryKind.USER, text="after the disk was freed")])
    store.close()
    reopened = SqliteStore(tiny_disk / "state.db", profile="tiny")
    texts = [entry.text for entry in reopened.path(session.id)]
    assert texts[:20] == [f"kept {i}" for i in range(20)]
    assert texts[-1] == "after the disk was freed"
    assert reopened.conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    reopened.close()
