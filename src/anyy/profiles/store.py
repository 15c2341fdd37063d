"""The one place that chooses a profile's storage backend and opens its store.

Everything else (the runtime, the Gateway, the CLI, backups) works with the
:class:`~anyy.storage.protocol.SessionStore` this returns and never names a backend. A new backend is one
more branch in each function here, chosen by :func:`store_backend`; backends are imported only when used.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from anyy.profiles.config import CONFIG_FILE, load_config, store_url
from anyy.profiles.profile import STATE_DB, Profile

if TYPE_CHECKING:
    from anyy.storage.protocol import SessionStore

DEFAULT_BACKEND = "sqlite"
# Files a store's snapshot may consist of, in a backup archive (every backend's).
SNAPSHOT_FILES = (STATE_DB,)


def store_backend(profile: Profile) -> str:
    """The backend that holds ``profile``'s sessions: PostgreSQL when a store URL is set (SPEC P1)."""
    url, _setting = store_url(profile.load_config(), profile.config_path)
    return "postgresql" if url else DEFAULT_BACKEND


def open_store(profile: Profile) -> SessionStore:
    """Open ``profile``'s store (the caller closes it). Use it from one thread, or through a StoreOwner."""
    backend = store_backend(profile)
    durability = profile.load_config().store.durability
    if backend == "sqlite":
        from anyy.storage.sqlite import SqliteStore

        return SqliteStore.open_profile(profile.path, profile=profile.name, durability=durability)
    if backend == "postgresql":
        from anyy.storage.choose import open_store as open_url

        url, setting = store_url(profile.load_config(), profile.config_path)
        return open_url(profile.path, profile=profile.name, url=url, setting=setting, durability=durability)
    raise AssertionError(f"unknown storage backend {backend!r}")  # store_backend names only known ones


def check_snapshot(profile: Profile, directory: Path) -> str | None:
    """What is wrong with a snapshot about to become ``profile``'s store (a restore), or None."""
    backend = store_backend(profile)
    if backend in ("sqlite", "postgresql"):  # a PostgreSQL store's snapshot is a SQLite store (state.db, objects/)
        from anyy.storage.sqlite.snapshot import check_snapshot as check_sqlite_snapshot

        return check_sqlite_snapshot(directory)
    raise AssertionError(f"unknown storage backend {backend!r}")


def restore_snapshot(directory: Path, *, overwrite: bool) -> str | None:
    """Put a restored profile's snapshot (in ``directory``, with the archive's config.toml) back into its
    store. A SQLite profile's snapshot is its store already: nothing to do. For a profile whose settings name
    a PostgreSQL database, the snapshot is copied into that database (refused if it holds sessions, unless
    ``overwrite``) and removed from the folder; returns that database's URL (without its password)."""
    url, setting = store_url(load_config(directory / CONFIG_FILE), directory / CONFIG_FILE)
    if not url:
        return None
    from anyy.storage.choose import redact
    from anyy.storage.postgres.transfer import copy_sqlite_to_postgres

    copy_sqlite_to_postgres(directory / STATE_DB, directory / "objects", url, force=overwrite, setting=setting)
    (directory / STATE_DB).unlink()
    shutil.rmtree(directory / "objects", ignore_errors=True)  # their bytes are in the database now
    return redact(url)
