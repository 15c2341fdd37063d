"""``check`` (D11) of the SQLite store: see :mod:`anyy.storage.checks` for what each check means."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from anyy.storage.checks import RECOVERY_NOTE, Finding
from anyy.storage.checks_sql import ChecksSql
from anyy.storage.objects import ObjectFiles
from anyy.storage.sqlite.queue import QueuePart
from anyy.storage.sqlite.upkeep import UpkeepPart


class CheckPart(QueuePart, UpkeepPart, ChecksSql):
    _index_ids = "entries_fts_docsize"

    def _empty_index(self, conn: sqlite3.Connection) -> None:
        # An external-content index forgets a row only given its text: start it again, whole.
        conn.execute("INSERT INTO entries_fts (entries_fts) VALUES ('delete-all')")

    def _check_structure(self, found: Finding) -> None:
        rows = [r[0] for r in self.conn.execute("PRAGMA integrity_check")]
        if rows != ["ok"]:
            found.add(len(rows), f"SQLite's integrity check: {'; '.join(rows[:3])}")
        keys = self.conn.execute("PRAGMA foreign_key_check").fetchall()
        found.add(
            len(keys), f"{len(keys)} row(s) name a missing row (foreign keys), e.g. in {keys[0][0] if keys else ''}"
        )
        try:
            self.conn.execute("INSERT INTO entries_fts (entries_fts) VALUES ('integrity-check')")
        except sqlite3.DatabaseError as exc:  # what SQLite says is the finding
            found.add(1, f"the search index's structure: {exc}")

    def _check_objects(self, repair: bool) -> Finding:
        found = Finding(check="objects")
        known = {row[0]: row[1] for row in self.conn.execute("SELECT hash, size FROM objects")}
        dangling = [
            row[0]
            for row in self.conn.execute(
                "SELECT DISTINCT obj FROM (SELECT obj FROM object_refs UNION SELECT obj FROM entries "
                "WHERE obj IS NOT NULL) WHERE obj NOT IN (SELECT hash FROM objects)"
            )
        ]
        found.add(len(dangling), f"{len(dangling)} referenced objects are not in the store, e.g. {dangling[:1]}")
        unref = self.conn.execute(
            "SELECT id, obj FROM entries e WHERE obj IS NOT NULL "
            "AND NOT EXISTS (SELECT 1 FROM object_refs r WHERE r.holder = e.id AND r.obj = e.obj)"
        ).fetchall()
        found.add(len(unref), f"{len(unref)} large bodies not counted as references (upkeep could remove them)")
        damaged = [h for h, size in known.items() if not self._object_intact(h, size)]
        found.add(len(damaged), f"{len(damaged)} objects missing or damaged on disk, e.g. {damaged[:1]}")
        stray = [path for path in _object_files(self.objects.root) if path.name not in known]
        found.add(len(stray), f"{len(stray)} files in objects/ that the store does not know (or half-written)")
        if repair:
            with self._tx() as conn:
                conn.executemany("INSERT OR IGNORE INTO object_refs (holder, obj) VALUES (?, ?)", unref)
            for path in stray:
                path.unlink(missing_ok=True)
            found.repaired = len(unref) + len(stray)
        return found

    def _object_intact(self, object_hash: str, size: int) -> bool:
        path = self.objects.path(object_hash)
        try:
            data = path.read_bytes()
        except OSError:
            return False
        return len(data) == size and ObjectFiles.hash_of(data) == object_hash

    def _check_executions(self, repair: bool) -> Finding:
        found = Finding(check="executions")
        left = [
            row[0]
            for row in self.conn.execute(
                "SELECT e.id FROM executions e JOIN sessions x ON x.num = e.session_num "
                "WHERE e.state IN ('running', 'retry_wait') AND x.status = 'active'"
            )
        ]
        found.add(len(left), f"{len(left)} executions left running with no Gateway, e.g. {left[:1]}")
        if repair and left:
            found.repaired = sum(e.state != "running" for e in self.recover_interrupted(RECOVERY_NOTE))
        return found


def _object_files(root: Path) -> list[Path]:
    """Every file under ``objects/`` (its two-letter folders), half-written ones included."""
    if not root.is_dir():
        return []
    return [Path(folder, name) for folder, _dirs, names in os.walk(root) for name in names]
