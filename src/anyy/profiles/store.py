"""The one place that chooses a profile's storage backend and opens its store.

Everything else (the runtime, the Gateway, the CLI, backups) works with the
:class:`~anyy.storage.protocol.SessionStore` this returns and never names a backend. A new backend is one
more branch in each function here, chosen by :func:`store_backend`; backends are imported only when used.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from anyy.profiles.profile import STATE_DB, Profile

if TYPE_CHECKING:
    from anyy.storage.protocol import SessionStore

DEFAULT_BACKEND = "sqlite"
# Files a store's snapshot may consist of, in a backup archive (every backend's).
SNAPSHOT_FILES = (STATE_DB,)


def store_backend(profile: Profile) -> str:
    """The backend that holds ``profile``'s sessions."""
    return DEFAULT_BACKEND


def open_store(profile: Profile) -> SessionStore:
    """Open ``profile``'s store (the caller closes it). Use it from one thread, or through a StoreOwner."""
    backend = store_backend(profile)
    if backend == "sqlite":
        from anyy.storage.sqlite import SqliteStore

        return SqliteStore.open_profile(profile.path, profile=profile.name)
    raise AssertionError(f"unknown storage backend {backend!r}")  # store_backend names only known ones


def check_snapshot(profile: Profile, directory: Path) -> str | None:
    """What is wrong with a snapshot about to become ``profile``'s store (a restore), or None."""
    backend = store_backend(profile)
    if backend == "sqlite":
        from anyy.storage.sqlite.snapshot import check_snapshot as check_sqlite_snapshot

        return check_sqlite_snapshot(directory)
    raise AssertionError(f"unknown storage backend {backend!r}")
