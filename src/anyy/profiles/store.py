"""The one place that chooses a profile's storage backend and opens its store.

Everything else (the runtime, the Gateway, the CLI, backups) works with the
:class:`~anyy.storage.protocol.SessionStore` this returns and never names a backend. A new backend is one
more branch here, chosen by the profile's configuration; backends are imported only when opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from anyy.profiles.config import store_url
from anyy.profiles.profile import Profile

if TYPE_CHECKING:
    from anyy.storage.protocol import SessionStore

DEFAULT_BACKEND = "sqlite"


def store_backend(profile: Profile) -> str:
    """The backend that holds ``profile``'s sessions: PostgreSQL when a store URL is set (SPEC P1)."""
    url, _setting = store_url(profile.load_config(), profile.config_path)
    return "postgresql" if url else DEFAULT_BACKEND


def open_store(profile: Profile) -> SessionStore:
    """Open ``profile``'s store (the caller closes it). Use it from one thread, or through a StoreOwner."""
    backend = store_backend(profile)
    if backend == "sqlite":
        from anyy.storage.sqlite import SqliteStore

        return SqliteStore.open_profile(profile.path, profile=profile.name)
    if backend == "postgresql":
        from anyy.storage.choose import open_store as open_url

        url, setting = store_url(profile.load_config(), profile.config_path)
        return open_url(profile.path, profile=profile.name, url=url, setting=setting)
    raise AssertionError(f"unknown storage backend {backend!r}")  # store_backend names only known ones
