"""Delete (F3), the upkeep that reclaims what no live session reaches, and objects.

The same model as the SQLite store's upkeep (see its module): ``delete_session`` hides the session and
queues its range in constant time; :meth:`UpkeepPart.maintain` reclaims the range a bounded step at a time,
keeping every entry on the path of an entry point (another session's head or fork point, or the parent of
an entry another session appended). The kept paths are found with one recursive query per range.
PostgreSQL's autovacuum turns the deleted rows into free space.
"""

from __future__ import annotations

from anyy.domain import entry_ids
from anyy.domain.errors import InvalidInput
from anyy.storage import rules
from anyy.storage.postgres.core import check_hash, hash_of
from anyy.storage.postgres.search import SearchPart
from anyy.storage.protocol import Maintenance, ObjectRef
from anyy.storage.rules import SWEEP_INTERVAL, UNUSED_OBJECT_GRACE
from anyy.storage.sqlite.upkeep import _merge as merge_intervals
from anyy.storage.sqlite.upkeep import _subtract as subtract_intervals

ANALYZE_AFTER = 5_000  # rows indexed or reclaimed since the last ANALYZE

# Entry points into a range [lo, hi] from outside it, and the runs of their paths inside the range.
_KEPT_RUNS_SQL = (
    "WITH RECURSIVE points(id) AS ("
    " SELECT parent FROM cross_links WHERE parent BETWEEN %(lo)s AND %(hi)s AND child NOT BETWEEN %(lo)s AND %(hi)s"
    " UNION SELECT head FROM sessions WHERE head BETWEEN %(lo)s AND %(hi)s AND num <> %(num)s"
    " UNION SELECT fork_point FROM sessions WHERE fork_point BETWEEN %(lo)s AND %(hi)s AND num <> %(num)s"
    "), walk(run, upto, parent) AS ("
    " SELECT e.run, e.id, s.parent FROM points p JOIN entries e ON e.id = p.id JOIN entries s ON s.id = e.run"
    " UNION"
    " SELECT e.run, e.id, s.parent FROM walk w JOIN entries e ON e.id = w.parent JOIN entries s ON s.id = e.run"
    " WHERE w.parent BETWEEN %(lo)s AND %(hi)s"
    ") SELECT run, upto FROM walk"
)


class UpkeepPart(SearchPart):
    _changed_rows = 0

    def delete_session(self, session_id: str) -> None:
        # Pipelined: the checks in one round trip, the changes and COMMIT in the next.
        with self.conn.pipeline(), self._tx() as conn:
            num = self._session_num(session_id, lock=True)
            row = conn.execute(
                "SELECT (SELECT count(*) FROM executions WHERE session_num = %s "
                "AND state IN ('running', 'retry_wait', 'suspended')), "
                "(SELECT count(*) FROM submissions WHERE session_num = %s AND state = 'pending'), "
                "head, fork_point FROM sessions WHERE num = %s",
                (num, num, num),
            ).fetchone()
            assert row is not None
            running, pending, *points = row
            if running or pending:
                raise rules.unfinished_work(session_id, running, pending)
            conn.execute(
                "UPDATE sessions SET status = 'deleted', head = NULL, fork_point = NULL, updated_at = %s "
                "WHERE num = %s",
                (self.clock(), num),
            )
            conn.execute("DELETE FROM channel_senders WHERE session_id = %s", (session_id,))  # L2: its send rights
            for point in points:
                if point and entry_ids.owner_number(point) != num:
                    self._requeue_deleted(entry_ids.owner_number(point))
            conn.execute(
                "DELETE FROM object_refs WHERE holder IN (SELECT -num FROM submissions WHERE session_num = %s)",
                (num,),
            )
            conn.execute("DELETE FROM submissions WHERE session_num = %s", (num,))
            conn.execute("DELETE FROM executions WHERE session_num = %s", (num,))
            conn.execute("INSERT INTO gc_queue (session_num) VALUES (%s) ON CONFLICT DO NOTHING", (num,))
        self._nums.pop(session_id, None)
        if self._unindexed is not None:
            self._unindexed.discard(num)

    def _requeue_deleted(self, num: int) -> None:
        """Queue a deleted session's range for reclaiming again (inside a transaction)."""
        self.conn.execute(
            "INSERT INTO gc_queue (session_num) SELECT num FROM sessions WHERE num = %s AND status = 'deleted' "
            "ON CONFLICT DO NOTHING",
            (num,),
        )

    def _kept_intervals(self, num: int) -> list[tuple[int, int]]:
        lo, hi = entry_ids.session_range(num)
        rows = self._all(_KEPT_RUNS_SQL, {"lo": lo, "hi": hi, "num": num})  # type: ignore[arg-type]
        return merge_intervals([(run, upto) for run, upto in rows if lo <= upto <= hi])

    def _collect_range(self, num: int, budget: int) -> tuple[int, bool]:
        """One bounded step over one deleted session's range: (entries removed, done)."""
        conn = self.conn
        lo, hi = entry_ids.session_range(num)
        removed = 0
        orphan_candidates: set[str] = set()
        requeue: set[int] = set()
        for d_lo, d_hi in subtract_intervals(lo, hi, self._kept_intervals(num)):
            if removed >= budget:
                break
            found = conn.execute(
                "SELECT count(*), max(id) FROM (SELECT id FROM entries WHERE id BETWEEN %s AND %s ORDER BY id "
                "LIMIT %s) t",
                (d_lo, d_hi, budget - removed),
            ).fetchone()
            assert found is not None
            count, top = found
            if not count:
                continue
            self._remove_entries(d_lo, top, orphan_candidates, requeue)
            removed += count
        if orphan_candidates:
            conn.execute(
                "DELETE FROM objects o WHERE o.hash = ANY(%s) "
                "AND NOT EXISTS (SELECT 1 FROM object_refs r WHERE r.obj = o.hash)",
                (sorted(orphan_candidates),),
            )
        for other in requeue - {num}:
            self._requeue_deleted(other)
        done = removed < budget
        if done:
            conn.execute("DELETE FROM gc_queue WHERE session_num = %s", (num,))
            left = conn.execute("SELECT 1 FROM entries WHERE id BETWEEN %s AND %s LIMIT 1", (lo, hi)).fetchone()
            if left is None:
                conn.execute("DELETE FROM sessions WHERE num = %s", (num,))
            else:
                self._note_unindexed(num)  # what a fork keeps is searchable, also if it was never indexed
        return removed, done

    def _remove_entries(self, lo: int, hi: int, orphan_candidates: set[str], requeue: set[int]) -> None:
        """Delete the entries ``lo``..``hi`` with their search words, object references and cross links,
        noting the objects that may now be unused and the sessions whose links pointed into the range."""
        conn = self.conn
        conn.execute("DELETE FROM entry_words WHERE id BETWEEN %s AND %s", (lo, hi))
        orphan_candidates.update(
            r[0]
            for r in conn.execute(
                "DELETE FROM object_refs WHERE holder BETWEEN %s AND %s RETURNING obj", (lo, hi)
            ).fetchall()
        )
        requeue.update(
            entry_ids.owner_number(r[0])
            for r in conn.execute(
                "DELETE FROM cross_links WHERE child BETWEEN %s AND %s RETURNING parent", (lo, hi)
            ).fetchall()
        )
        conn.execute("DELETE FROM entries WHERE id BETWEEN %s AND %s", (lo, hi))

    def _collect_garbage(self, budget: int) -> tuple[int, bool]:
        """Reclaim up to ``budget`` entries of deleted sessions; (entries removed, more left)."""
        removed = 0
        while removed < budget:
            row = self._one("SELECT session_num FROM gc_queue ORDER BY session_num LIMIT 1")
            if row is None:
                return removed, False
            with self._tx():
                # Another host's upkeep may be at the same range: one of them does it, the other moves on.
                if self._one("SELECT 1 FROM gc_queue WHERE session_num = %s FOR UPDATE SKIP LOCKED", (row[0],)):
                    count, _done = self._collect_range(row[0], budget - removed)
                else:
                    return removed, True
            removed += count
        return removed, self._one("SELECT 1 FROM gc_queue LIMIT 1") is not None

    def maintain(self, budget: int = 2000) -> Maintenance:
        indexed, more_index = self._index_pending(budget)
        collected, more_gc = self._collect_garbage(max(budget - indexed, 1))
        self._changed_rows += indexed + collected
        if not (more_index or more_gc) and self._changed_rows >= ANALYZE_AFTER:
            # Fresh statistics at once after a large import or reclaim, rather than at autovacuum's next
            # round: without them a rare word's search may scan every entry.
            self._changed_rows = 0
            self.conn.execute("ANALYZE entries, entry_words")
        now = self.clock()
        if now - self._last_sweep >= SWEEP_INTERVAL:
            self._last_sweep = now
            collected += self._sweep_unused_objects(older_than=now - UNUSED_OBJECT_GRACE, budget=budget)
        return Maintenance(indexed=indexed, collected=collected, more=more_index or more_gc)

    def _sweep_unused_objects(self, *, older_than: float, budget: int) -> int:
        """Remove uploads that nothing came to reference (an attachment never sent) after a grace period."""
        with self._tx() as conn:
            swept = conn.execute(
                "DELETE FROM objects WHERE hash IN (SELECT hash FROM objects o WHERE created_at < %s "
                "AND NOT EXISTS (SELECT 1 FROM object_refs r WHERE r.obj = o.hash) LIMIT %s) RETURNING hash",
                (older_than, budget),
            ).fetchall()
        return len(swept)

    # -- objects ---------------------------------------------------------------------------------
    def put_object(self, data: bytes, *, media_type: str = "application/octet-stream") -> ObjectRef:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise InvalidInput(f"an object's content is bytes, not {type(data).__name__}")
        data = bytes(data)
        object_hash = hash_of(data)
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO objects (hash, size, media_type, created_at, body) VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (hash) DO NOTHING",
                (object_hash, len(data), media_type, self.clock(), data),
            )
        return ObjectRef(hash=object_hash, size=len(data), media_type=media_type)

    def object_bytes(self) -> int:
        with self._tx() as conn:
            row = conn.execute("SELECT COALESCE(SUM(size), 0) FROM objects").fetchone()
        return int(row[0]) if row is not None else 0

    def read_object(self, object_hash: str) -> bytes:
        return self._object_bytes(check_hash(object_hash))
