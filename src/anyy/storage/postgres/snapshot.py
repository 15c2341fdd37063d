"""A consistent copy of the database for backups, while Gateways go on writing.

The copy is a SQLite store (``state.db`` and ``objects/``) written from one REPEATABLE READ transaction:
a format any anyy opens, that ``anyy backup`` archives like a SQLite profile's, and that a restore copies
back into a PostgreSQL database (``transfer.copy_sqlite_to_postgres``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from anyy.storage import rules
from anyy.storage.postgres.core import PgCore
from anyy.storage.postgres.transfer import export_postgres
from anyy.storage.protocol import StoreSnapshot
from anyy.storage.store_urls import redact

SNAPSHOT_DB = "state.db"
SNAPSHOT_OBJECTS = "objects"


class SnapshotPart(PgCore):
    def snapshot(self, directory: Path) -> StoreSnapshot:
        directory = Path(directory)
        target = directory / SNAPSHOT_DB
        if target.exists():
            raise rules.snapshot_target_exists(target)
        report = export_postgres(self.conn, target, directory / SNAPSHOT_OBJECTS, where=redact(self.url))
        objects = directory / SNAPSHOT_OBJECTS
        copied = sorted(str(path.relative_to(directory)) for path in objects.rglob("*") if path.is_file())
        files = [SNAPSHOT_DB, *copied]
        return StoreSnapshot(
            files=files,
            sessions=self._count("SELECT count(*) FROM sessions WHERE status = 'active'"),
            entries=report.counts["entries"],
            submissions=report.counts["submissions"],
            objects=_referenced(target),  # their bytes are in the copy's objects/ already
        )

    def _count(self, sql: str) -> int:
        row = self._one(sql)
        return int(row[0]) if row else 0


def _referenced(db_path: Path) -> list[str]:
    """The objects the copy's entries and queue items reference."""
    conn = sqlite3.connect(db_path)
    try:
        return sorted(
            row[0]
            for row in conn.execute("SELECT obj FROM entries WHERE obj IS NOT NULL UNION SELECT obj FROM object_refs")
        )
    finally:
        conn.close()
