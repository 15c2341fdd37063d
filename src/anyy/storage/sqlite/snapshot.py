"""A consistent copy of ``state.db`` for backups, taken with SQLite's online backup API."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from anyy.domain.errors import InvalidInput
from anyy.storage import rules
from anyy.storage.protocol import StoreSnapshot
from anyy.storage.sqlite.core import StoreCore

SNAPSHOT_DB = "state.db"


class SnapshotPart(StoreCore):
    def snapshot(self, directory: Path) -> StoreSnapshot:
        target = Path(directory) / SNAPSHOT_DB
        if target.exists():
            raise rules.snapshot_target_exists(target)
        try:
            dst = sqlite3.connect(target)
            try:
                # Every page in one step: one read transaction, so one moment's state even while others write.
                self.conn.backup(dst)
                dst.execute("PRAGMA journal_mode = DELETE")  # no -wal beside the copy; opening sets WAL again
                (result,) = dst.execute("PRAGMA integrity_check").fetchone()
                if result != "ok":
                    raise InvalidInput(
                        f"the copy of {self.db_path} fails SQLite's integrity check ({result}); nothing was written"
                    )
                return _describe(dst)
            finally:
                dst.close()
        except BaseException as exc:
            target.unlink(missing_ok=True)
            raise self._translate(exc) from exc


def _describe(conn: sqlite3.Connection) -> StoreSnapshot:
    def count(sql: str) -> int:
        return int(conn.execute(sql).fetchone()[0])

    objects = sorted(
        row[0]
        for row in conn.execute("SELECT obj FROM entries WHERE obj IS NOT NULL UNION SELECT obj FROM object_refs")
    )
    return StoreSnapshot(
        files=[SNAPSHOT_DB],
        sessions=count("SELECT count(*) FROM sessions WHERE status = 'active'"),
        entries=count("SELECT count(*) FROM entries"),
        submissions=count("SELECT count(*) FROM submissions"),
        objects=objects,
    )


def check_snapshot(directory: Path) -> str | None:
    """What is wrong with a snapshot in ``directory`` (before it is put in place), or None."""
    db = Path(directory) / SNAPSHOT_DB
    if not db.exists():
        return None  # a profile backed up before its store was ever opened
    conn = sqlite3.connect(db)
    try:
        (result,) = conn.execute("PRAGMA integrity_check").fetchone()
    except sqlite3.DatabaseError as exc:
        result = str(exc)
    finally:
        conn.close()
    return None if result == "ok" else f"its {SNAPSHOT_DB} fails SQLite's integrity check ({result})"
