"""The backends the conformance suite runs against, by name.

A backend is a function opening a store whose files (if any) live in a given directory; opening it twice
on the same directory must reach the same data (the suite reopens stores to prove durability), and
opening it on a folder :meth:`SessionStore.snapshot` wrote into must reach the snapshot's data. To add a
backend, add one entry here: no test changes.

The crash test's child process imports this module too, so it must not import pytest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from anyy.storage.memory import MemoryData, MemoryStore
from anyy.storage.memory.upkeep import load_snapshot
from anyy.storage.protocol import SessionStore
from anyy.storage.sqlite import SqliteStore


def open_sqlite(directory: Path) -> SessionStore:
    return SqliteStore(directory / "state.db", objects_dir=directory / "objects", profile="test")


def open_postgresql(directory: Path) -> SessionStore:
    """A store in this run's database, in a schema named after the directory (so reopening it, also from
    the crash test's child process, reaches the same data)."""
    from anyy.storage.postgres import PostgresStore
    from anyy.storage.postgres.transfer import copy_sqlite_to_postgres
    from tests.postgres.server import run_database_url

    schema = "s_" + hashlib.sha256(str(directory.resolve()).encode()).hexdigest()[:20]
    store = PostgresStore(run_database_url(), schema=schema, profile="test")
    snapshot = directory / "state.db"  # what PostgresStore.snapshot wrote here: loaded into the empty schema
    if snapshot.exists() and not store.list_sessions(limit=1).items:
        store.close()
        copy_sqlite_to_postgres(snapshot, directory / "objects", run_database_url(), schema=schema)
        store = PostgresStore(run_database_url(), schema=schema, profile="test")
    return store


# The in-memory backend's "files": what a store opened on a folder holds, for as long as the process lives.
_MEMORY: dict[Path, MemoryData] = {}


def open_memory(directory: Path) -> SessionStore:
    data = _MEMORY.get(directory)
    if data is None:
        data = _MEMORY[directory] = load_snapshot(directory) or MemoryData()
    return MemoryStore(data, profile="test")


BACKENDS: dict[str, Callable[[Path], SessionStore]] = {
    "sqlite": open_sqlite,
    "memory": open_memory,
    "postgresql": open_postgresql,
}
# Backends whose data outlives the process (the crash test kills one).
DURABLE = frozenset({"sqlite", "postgresql"})


def open_backend(name: str, directory: Path) -> SessionStore:
    return BACKENDS[name](directory)
