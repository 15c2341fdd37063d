"""The PostgreSQL backend (psycopg 3), chosen by ``[store] url = "postgresql://…"`` in a profile's config.

Importing this package imports psycopg: only a profile that uses PostgreSQL does (``pip install
'anyy[postgres]'``).
"""

from anyy.storage.postgres.store import PostgresStore
from anyy.storage.store_urls import StoreSettingError

__all__ = ["PostgresStore", "StoreSettingError"]
