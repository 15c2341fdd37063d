"""``check`` (D11) over SQL, for the two SQL backends (their tables are the same): the checks' order, the
tree's links and the queue's leftovers, written once with ``?`` marks. What differs (the database's own
structure, the search index, where objects live, who may be running work) each backend says itself; see
:mod:`anyy.storage.checks` for what each check means."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from anyy.domain import entry_ids
from anyy.domain.entries import SEARCHABLE_KINDS
from anyy.domain.queue import outcome_for
from anyy.storage.checks import Finding, checks_to_run

FINAL = "('completed', 'failed', 'interrupted', 'timed_out', 'budget_exhausted')"
_SEARCHABLE = ",".join(str(int(k)) for k in sorted(SEARCHABLE_KINDS))
# Searchable messages up to their session's indexed mark, in sessions the index covers (see SearchPart).
INDEXED_ENTRIES = (
    f"SELECT e.id FROM entries e JOIN sessions s ON s.num = (e.id >> {entry_ids.SEQ_BITS}) "
    f"WHERE e.kind IN ({_SEARCHABLE}) AND (e.text IS NOT NULL OR e.obj IS NOT NULL) "
    f"AND (e.id & {entry_ids.MAX_SEQ}) <= s.indexed_seq AND s.num NOT IN (SELECT session_num FROM gc_queue)"
)


class ChecksSql:
    """The store's ``check``: each check by name, the shared ones here."""

    clock: Any
    conn: Any
    _tx: Any
    _one: Any
    _unindexed: Any
    _index_pending: Any
    _index_ids: str  # the search index's table of one row per indexed entry (column ``id``)

    def _sql(self, text: str) -> str:
        return text

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

    def _counted(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        row = self._one(self._sql(sql), params)
        return int(row[0]) if row else 0

    def _check_structure(self, found: Finding) -> None:
        """The database's own structure, where it checks it on demand."""

    def _empty_index(self, conn: Any) -> None:
        """Inside a write transaction: the search index emptied, to be built again."""
        raise NotImplementedError

    def _check_search_index(self, repair: bool) -> Finding:
        found = Finding(check="search_index")
        ids = self._index_ids
        stale = self._counted(
            f"SELECT count(*) FROM {ids} d WHERE NOT EXISTS (SELECT 1 FROM entries e WHERE e.id = d.id)"
        )
        found.add(stale, f"{stale} index rows for entries that do not exist")
        missing = self._counted(
            f"SELECT count(*) FROM ({INDEXED_ENTRIES}) m WHERE NOT EXISTS (SELECT 1 FROM {ids} d WHERE d.id = m.id)"
        )
        found.add(missing, f"{missing} messages missing from the search index")
        if repair and found.problems:
            with self._tx() as conn:
                self._empty_index(conn)
                conn.execute("UPDATE sessions SET indexed_seq = 0")
            self._unindexed = None
            while self._index_pending(50_000)[1]:
                pass
            found.repaired = found.problems
        return found

    def _check_objects(self, repair: bool) -> Finding:
        raise NotImplementedError

    def _check_executions(self, repair: bool) -> Finding:
        raise NotImplementedError

    def _check_integrity(self, repair: bool) -> Finding:
        found = Finding(check="integrity")
        self._check_structure(found)
        orphans = self._counted(
            "SELECT count(*) FROM entries e WHERE e.parent IS NOT NULL "
            "AND NOT EXISTS (SELECT 1 FROM entries p WHERE p.id = e.parent)"
        )
        found.add(orphans, f"{orphans} entries whose parent is missing")
        heads = self._counted(
            "SELECT count(*) FROM sessions s WHERE s.head > 0 "
            "AND NOT EXISTS (SELECT 1 FROM entries e WHERE e.id = s.head)"
        )
        found.add(heads, f"{heads} sessions whose head is a missing entry")
        return found

    def _check_queue(self, repair: bool) -> Finding:
        found = Finding(check="queue")
        rows = self.conn.execute(
            "SELECT s.id, e.state FROM submissions s LEFT JOIN executions e ON e.id = s.execution_id "
            f"WHERE s.state IN ('taken', 'suspended') AND (e.id IS NULL OR e.state IN {FINAL})"
        ).fetchall()
        example = rows[0][0] if rows else ""
        found.add(len(rows), f"{len(rows)} queue items still taken by an execution that ended, e.g. {example}")
        if repair and rows:
            now = self.clock()
            with self._tx() as conn:
                conn.cursor().executemany(
                    self._sql("UPDATE submissions SET state = ?, version = version + 1, updated_at = ? WHERE id = ?"),
                    [(outcome_for(state) if state else "interrupted", now, sid) for sid, state in rows],
                )
            found.repaired = len(rows)
        return found
