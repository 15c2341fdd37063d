"""``check`` (D11) of the SQLite store: see :mod:`anyy.storage.checks` for what each check means."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from anyy.domain import entry_ids
from anyy.domain.queue import outcome_for
from anyy.storage.checks import RECOVERY_NOTE, Finding, checks_to_run
from anyy.storage.objects import ObjectFiles
from anyy.storage.sqlite.queue import QueuePart
from anyy.storage.sqlite.search import SEARCHABLE
from anyy.storage.sqlite.upkeep import UpkeepPart

FINAL = "('completed', 'failed', 'interrupted', 'timed_out')"
# Searchable messages up to their session's indexed mark, in sessions the index covers (see SearchPart).
_INDEXED_ENTRIES = (
    f"SELECT e.id FROM entries e JOIN sessions s ON s.num = (e.id >> {entry_ids.SEQ_BITS}) "
    f"WHERE e.kind IN ({SEARCHABLE}) AND (e.text IS NOT NULL OR e.obj IS NOT NULL) "
    f"AND (e.id & {entry_ids.MAX_SEQ}) <= s.indexed_seq AND s.num NOT IN (SELECT session_num FROM gc_queue)"
)


class CheckPart(QueuePart, UpkeepPart):
    def check(self, *, repair: bool = False, skip: Sequence[str] = ()) -> list[Finding]:
        run = {
            "integrity": self._check_integrity,
            "search_index": self._check_search_index,
            "objects": self._check_objects,
            "executions": self._check_executions,
            "queue": self._check_queue,
        }
        wanted = checks_to_run(skip)
        return [run[name](repair) if name in wanted else Finding(check=name, skipped="not asked") for name in run]

    def _count(self, sql: str, params: tuple[object, ...] = ()) -> int:
        row = self._one(sql, params)
        return int(row[0]) if row else 0

    def _check_integrity(self, repair: bool) -> Finding:
        found = Finding(check="integrity")
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
        orphans = self._count(
            "SELECT count(*) FROM entries e WHERE e.parent IS NOT NULL "
            "AND NOT EXISTS (SELECT 1 FROM entries p WHERE p.id = e.parent)"
        )
        found.add(orphans, f"{orphans} entries whose parent is missing")
        heads = self._count(
            "SELECT count(*) FROM sessions s WHERE s.head > 0 "
            "AND NOT EXISTS (SELECT 1 FROM entries e WHERE e.id = s.head)"
        )
        found.add(heads, f"{heads} sessions whose head is a missing entry")
        return found

    def _check_search_index(self, repair: bool) -> Finding:
        found = Finding(check="search_index")
        stale = self._count(
            "SELECT count(*) FROM entries_fts_docsize d WHERE NOT EXISTS (SELECT 1 FROM entries e WHERE e.id = d.id)"
        )
        found.add(stale, f"{stale} index rows for entries that do not exist")
        missing = self._count(
            f"SELECT count(*) FROM ({_INDEXED_ENTRIES}) m WHERE NOT EXISTS "
            "(SELECT 1 FROM entries_fts_docsize d WHERE d.id = m.id)"
        )
        found.add(missing, f"{missing} messages missing from the search index")
        if repair and found.problems:
            # An external-content index forgets a row only given its text: start it again, whole.
            with self._tx() as conn:
                conn.execute("INSERT INTO entries_fts (entries_fts) VALUES ('delete-all')")
                conn.execute("UPDATE sessions SET indexed_seq = 0")
            self._unindexed = None
            while self._index_pending(50_000)[1]:
                pass
            found.repaired = found.problems
        return found

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
            found.repaired = len(self.recover_interrupted(RECOVERY_NOTE))
        return found

    def _check_queue(self, repair: bool) -> Finding:
        found = Finding(check="queue")
        rows = self.conn.execute(
            "SELECT s.id, e.state FROM submissions s LEFT JOIN executions e ON e.id = s.execution_id "
            f"WHERE s.state IN ('taken', 'suspended') AND (e.id IS NULL OR e.state IN {FINAL})"
        ).fetchall()
        found.add(
            len(rows),
            f"{len(rows)} queue items still taken by an execution that ended, e.g. {rows[0][0] if rows else ''}",
        )
        if repair and rows:
            now = self.clock()
            with self._tx() as conn:
                conn.executemany(
                    "UPDATE submissions SET state = ?, version = version + 1, updated_at = ? WHERE id = ?",
                    [(outcome_for(state) if state else "interrupted", now, sid) for sid, state in rows],
                )
            found.repaired = len(rows)
        return found


def _object_files(root: Path) -> list[Path]:
    """Every file under ``objects/`` (its two-letter folders), half-written ones included."""
    if not root.is_dir():
        return []
    return [Path(folder, name) for folder, _dirs, names in os.walk(root) for name in names]
