"""Which store a profile uses: its own SQLite ``state.db``, or the PostgreSQL database its settings name.

Nothing here imports a database driver: psycopg is imported only when a profile names a PostgreSQL URL.
"""

from __future__ import annotations

from pathlib import Path

from anyy.domain.durability import Durability
from anyy.storage.protocol import SessionStore
from anyy.storage.store_urls import POSTGRES_SCHEMES, StoreSettingError, redact

__all__ = ["POSTGRES_SCHEMES", "StoreSettingError", "open_store", "redact"]


def open_store(
    profile_dir: Path,
    *,
    profile: str,
    url: str = "",
    setting: str = "the store URL",
    durability: Durability = "process",
) -> SessionStore:
    """The profile's store: SQLite in ``profile_dir`` when ``url`` is empty, else the database it names.

    ``setting`` says where the URL came from, for the errors a person reads."""
    if not url:
        from anyy.storage.sqlite import SqliteStore

        return SqliteStore.open_profile(profile_dir, profile=profile, durability=durability)
    if not url.startswith(POSTGRES_SCHEMES):
        raise StoreSettingError(
            f"{setting} is {redact(url)!r}: a store URL starts with postgresql:// (e.g. "
            "postgresql://user@host:5432/anyy); leave it empty to use the profile's SQLite state.db"
        )
    try:
        from anyy.storage.postgres import PostgresStore
    except ImportError as exc:
        raise StoreSettingError(
            f"{setting} names a PostgreSQL database, but the PostgreSQL driver is not installed ({exc}): "
            "install it with `pip install 'anyy[postgres]'`"
        ) from None
    return PostgresStore(url, profile=profile, setting=setting, durability=durability)
