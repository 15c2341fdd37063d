"""Damage that no protocol call can make, for the tests of ``check`` (D11): what a crash in the wrong place,
a bug, or hands in the files leave behind. Each reaches into one backend's own data; nothing else in the
conformance suite does."""

from __future__ import annotations

import sqlite3
from typing import Any

from anyy.storage.protocol import SessionStore


def _raw(store: SessionStore) -> Any:
    return store.conn  # type: ignore[attr-defined]  # the SQLite and PostgreSQL backends' own connection


def _run(backend: str, store: SessionStore, sql: str, *params: Any) -> None:
    if backend == "postgresql":
        _raw(store).execute(sql.replace("?", "%s"), params)
    else:
        conn: sqlite3.Connection = _raw(store)
        conn.execute(sql, params)


def retake(backend: str, store: SessionStore, submission_id: str) -> None:
    """Put an item whose execution ended back in ``taken`` (the wedge of D1)."""
    if backend == "memory":
        store.data.submissions[submission_id].submission.state = "taken"  # type: ignore[attr-defined]
        return
    _run(backend, store, "UPDATE submissions SET state = 'taken' WHERE id = ?", submission_id)


def forget_search_index(backend: str, store: SessionStore) -> None:
    if backend == "sqlite":
        _run(backend, store, "INSERT INTO entries_fts (entries_fts) VALUES ('delete-all')")
    elif backend == "postgresql":
        _run(backend, store, "DELETE FROM entry_words")


def drop_reference(backend: str, store: SessionStore, entry_id: int) -> None:
    """Lose the reference a large body's entry holds on its object."""
    if backend == "memory":
        store.data.entries[entry_id].refs = []  # type: ignore[attr-defined]
        return
    _run(backend, store, "DELETE FROM object_refs WHERE holder = ?", entry_id)


def damage_object(backend: str, store: SessionStore, object_hash: str) -> None:
    """Change an object's bytes (a disk error)."""
    if backend == "memory":
        store.data.objects[object_hash].data = b"damaged"  # type: ignore[attr-defined]
    elif backend == "postgresql":
        _run(backend, store, "UPDATE objects SET body = ? WHERE hash = ?", b"damaged", object_hash)
    else:
        store.objects.path(object_hash).write_bytes(b"damaged")  # type: ignore[attr-defined]


def drop_entry(backend: str, store: SessionStore, entry_id: int) -> None:
    """Remove one entry from the middle of a path (its child's parent is gone)."""
    if backend == "memory":
        del store.data.entries[entry_id]  # type: ignore[attr-defined]
        return
    _run(backend, store, "DELETE FROM entries WHERE id = ?", entry_id)
