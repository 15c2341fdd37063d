"""The PostgreSQL backend (psycopg 3), chosen by ``[store] url = "postgresql://…"`` in a profile's config.

Importing this package imports psycopg: only a profile that uses PostgreSQL does (``pip install
'anyy[postgres]'``).
"""

from anyy.storage.choose import StoreSettingError
from anyy.storage.postgres.store import PostgresStore

__all__ = ["PostgresStore", "StoreSettingError"]
