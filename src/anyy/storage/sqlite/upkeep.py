"""Delete (F3) and the upkeep that follows it: reclaiming what no live session reaches any more.

``delete_session`` only checks that no work is unfinished, hides the session and queues its entry range:
it returns in constant time whatever the session's size. :meth:`UpkeepPart.maintain` then reclaims the
range a bounded step at a time. What stays is every entry on the path of an *entry point*: the parent of
an entry appended by another session (a fork's first entry, through ``cross_links``) or another session's
head (a fork with no entry of its own yet). When kept entries of a deleted session lose their last entry
point, their range is queued again, so forks of forks deleted in any order end fully reclaimed.
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any

from anyy.domain import entry_ids
from anyy.domain.entries import SEARCHABLE_KINDS
from anyy.storage import rules
from anyy.storage.protocol import Maintenance, ObjectRef
from anyy.storage.sqlite.core import BUSY_TIMEOUT_MS, WAL_KEEP_BYTES
from anyy.storage.sqlite.search import SearchPart

_SEARCHABLE = {int(kind) for kind in SEARCHABLE_KINDS}
KEEP_FREE_PAGES = 256


def _subtract(lo: int, hi: int, keep: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of [lo, hi] outside the (sorted, merged) intervals of ``keep``."""
    out = []
    cursor = lo
    for k_lo, k_hi in keep:
        if k_hi < cursor:
            continue
        if k_lo > hi:
            break
        if k_lo > cursor:
            out.append((cursor, k_lo - 1))
        cursor = max(cursor, k_hi + 1)
    if cursor <= hi:
        out.append((cursor, hi))
    return out


def _merge(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(intervals):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


class UpkeepPart(SearchPart):
    def delete_session(self, session_id: str) -> None:
        with self._tx() as conn:
            num = self._session_num(session_id)
            (running,) = conn.execute(
                "SELECT count(*) FROM executions WHERE session_num = ? "
                "AND state IN ('running', 'retry_wait', 'suspended')",
                (num,),
            ).fetchone()
            (pending,) = conn.execute(
                "SELECT count(*) FROM submissions WHERE session_num = ? AND state = 'pending'", (num,)
            ).fetchone()
            if running or pending:
                raise rules.unfinished_work(session_id, running, pending)
            stored_head, fork_point = conn.execute(
                "SELECT head, fork_point FROM sessions WHERE num = ?", (num,)
            ).fetchone()
            conn.execute(
                "UPDATE sessions SET status = 'deleted', head = NULL, fork_point = NULL, updated_at = ? WHERE num = ?",
                (self.clock(), num),
            )
            conn.execute("DELETE FROM channel_senders WHERE session_id = ?", (session_id,))  # L2: its send rights
            for point in (stored_head, fork_point):
                if point and entry_ids.owner_number(point) != num:
                    # An entry point into another range: if that session is deleted too, what it kept
                    # only for this one may now go.
                    self._requeue_deleted(entry_ids.owner_number(point))
            sub_nums = [r[0] for r in conn.execute("SELECT num FROM submissions WHERE session_num = ?", (num,))]
            for sub_num in sub_nums:
                conn.execute("DELETE FROM object_refs WHERE holder = ?", (-sub_num,))
            conn.execute("DELETE FROM submissions WHERE session_num = ?", (num,))
            conn.execute("DELETE FROM executions WHERE session_num = ?", (num,))
            conn.execute("INSERT OR IGNORE INTO gc_queue (session_num) VALUES (?)", (num,))
        self._nums.pop(session_id, None)
        if self._unindexed is not None:
            self._unindexed.discard(num)

    def _requeue_deleted(self, num: int) -> None:
        """Queue a deleted session's range for reclaiming again (inside a transaction)."""
        self.conn.execute(
            "INSERT OR IGNORE INTO gc_queue (session_num) "
            "SELECT num FROM sessions WHERE num = ? AND status = 'deleted'",
            (num,),
        )

    def _kept_intervals(self, num: int) -> list[tuple[int, int]]:
        lo, hi = entry_ids.session_range(num)
        conn = self.conn
        points = [
            row[0]
            for row in conn.execute(
                "SELECT parent FROM cross_links WHERE parent BETWEEN ? AND ? AND child NOT BETWEEN ? AND ?",
                (lo, hi, lo, hi),
            )
        ]
        points += [
            row[0]
            for row in conn.execute("SELECT head FROM sessions WHERE head BETWEEN ? AND ? AND num != ?", (lo, hi, num))
        ]
        points += [
            row[0]
            for row in conn.execute(
                "SELECT fork_point FROM sessions WHERE fork_point BETWEEN ? AND ? AND num != ?", (lo, hi, num)
            )
        ]
        kept: list[tuple[int, int]] = []
        seen: set[int] = set()
        for point in points:
            current: int | None = point
            while current is not None and lo <= current <= hi and current not in seen:
                seen.add(current)
                row = conn.execute(
                    "SELECT e.run, s.parent FROM entries e JOIN entries s ON s.id = e.run WHERE e.id = ?",
                    (current,),
                ).fetchone()
                if row is None:
                    break
                kept.append((row[0], current))
                current = row[1]
        return _merge(kept)

    def _collect_range(self, num: int, budget: int) -> tuple[int, list[str], bool]:
        """One bounded step over one deleted session's range: (entries removed, files to remove, done)."""
        conn = self.conn
        lo, hi = entry_ids.session_range(num)
        indexed = self._one("SELECT indexed_seq FROM sessions WHERE num = ?", (num,))
        indexed_upto = entry_ids.make_entry_id(num, indexed[0]) if indexed else lo
        removed = 0
        orphan_candidates: set[str] = set()
        requeue: set[int] = set()
        for d_lo, d_hi in _subtract(lo, hi, self._kept_intervals(num)):
            if removed >= budget:
                break
            rows = conn.execute(
                "SELECT id, kind, text, obj FROM entries WHERE id BETWEEN ? AND ? ORDER BY id LIMIT ?",
                (d_lo, d_hi, budget - removed),
            ).fetchall()
            if not rows:
                continue
            self._remove_rows(rows, d_lo, indexed_upto, orphan_candidates=orphan_candidates, requeue=requeue)
            removed += len(rows)
        files = self._drop_orphans(orphan_candidates)
        for other in requeue - {num}:
            self._requeue_deleted(other)
        done = removed < budget
        if done:
            self._finish_collecting(num, lo, hi)
        return removed, files, done

    def _remove_rows(
        self, rows: list[Any], d_lo: int, indexed_upto: int, *, orphan_candidates: set[str], requeue: set[int]
    ) -> None:
        """Remove entries ``d_lo`` to the last of ``rows``, with their index text, object references and cross
        links; the objects they held and the sessions they hung from are noted."""
        conn = self.conn
        top = rows[-1][0]
        # The index forgets exactly the text it was given: the row's, or the object's for a large body.
        self._index_has_deletes = True
        conn.executemany(
            "INSERT INTO entries_fts (entries_fts, rowid, text) VALUES ('delete', ?, ?)",
            [
                (eid, text if obj is None else self._object_text(obj))
                for eid, kind, text, obj in rows
                if kind in _SEARCHABLE and eid <= indexed_upto and (text is not None or obj is not None)
            ],
        )
        orphan_candidates.update(
            r[0] for r in conn.execute("SELECT obj FROM object_refs WHERE holder BETWEEN ? AND ?", (d_lo, top))
        )
        conn.execute("DELETE FROM object_refs WHERE holder BETWEEN ? AND ?", (d_lo, top))
        requeue.update(
            entry_ids.owner_number(r[0])
            for r in conn.execute("SELECT parent FROM cross_links WHERE child BETWEEN ? AND ?", (d_lo, top))
        )
        conn.execute("DELETE FROM cross_links WHERE child BETWEEN ? AND ?", (d_lo, top))
        conn.execute("DELETE FROM entries WHERE id BETWEEN ? AND ?", (d_lo, top))

    def _drop_orphans(self, candidates: set[str]) -> list[str]:
        """Forget the objects nothing references any more; their files, for the caller to remove."""
        files = []
        for obj in candidates:
            if self.conn.execute("SELECT 1 FROM object_refs WHERE obj = ? LIMIT 1", (obj,)).fetchone() is None:
                self.conn.execute("DELETE FROM objects WHERE hash = ?", (obj,))
                files.append(obj)
        return files

    def _finish_collecting(self, num: int, lo: int, hi: int) -> None:
        conn = self.conn
        conn.execute("DELETE FROM gc_queue WHERE session_num = ?", (num,))
        left = conn.execute("SELECT 1 FROM entries WHERE id BETWEEN ? AND ? LIMIT 1", (lo, hi)).fetchone()
        if left is None:
            conn.execute("DELETE FROM sessions WHERE num = ?", (num,))
        elif self._unindexed is not None:
            self._unindexed.add(num)  # what a fork keeps is searchable, also if it was never indexed

    def _collect_garbage(self, budget: int) -> tuple[int, bool]:
        """Reclaim up to ``budget`` entries of deleted sessions; (entries removed, more left)."""
        removed = 0
        while removed < budget:
            row = self._one("SELECT session_num FROM gc_queue ORDER BY session_num LIMIT 1")
            if row is None:
                return removed, False
            with self._tx():
                count, files, _done = self._collect_range(row[0], budget - removed)
            for obj in files:
                self.objects.remove(obj)
            removed += count
        return removed, self._one("SELECT 1 FROM gc_queue LIMIT 1") is not None

    def _merge_index(self, pages: int) -> bool:
        """One bounded step of merging the search index's segments; True while there is more to do.

        Deleting from FTS5 only writes delete markers: the postings of reclaimed messages stay on disk
        until their segments are merged. The first step starts an incremental optimisation (a negative
        page count), the next ones continue it, until a step changes (next to) nothing."""
        before = self.conn.total_changes
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO entries_fts (entries_fts, rank) VALUES ('merge', ?)",
                (-pages if self._index_merge_starting else pages,),
            )
        self._index_merge_starting = False
        if self.conn.total_changes - before < 2:
            self._index_has_deletes = False
            self._index_merge_starting = True
            return False
        return True

    def _release_free_pages(self, pages: int) -> bool:
        """Give free pages back to the file system (a bounded step); True while many are left.

        A few free pages are kept: appends reuse them without growing the file."""
        (free,) = self.conn.execute("PRAGMA freelist_count").fetchone()
        if free <= KEEP_FREE_PAGES:
            return False
        # The pragma frees one page per step of its statement, and ``execute`` steps a statement that returns
        # no row only once: through it, a call freed a single page. ``executescript`` steps it to the end (the
        # connection is in autocommit, so its implicit COMMIT has nothing to commit).
        self.conn.executescript(f"PRAGMA incremental_vacuum({min(pages, free - KEEP_FREE_PAGES)})")
        (free,) = self.conn.execute("PRAGMA freelist_count").fetchone()
        return bool(free > KEEP_FREE_PAGES)

    def _shrink_wal(self) -> None:
        """Cut a WAL grown past :data:`WAL_KEEP_BYTES` back to nothing (D9).

        A full disk (or a long reader) stalls checkpoints, and the WAL grows; once they complete again,
        SQLite reuses the file from its start but keeps its size, and ``journal_size_limit`` cuts it only
        when a later write restarts it. A TRUNCATE checkpoint gives the space back now. It never waits for
        readers (busy timeout 0): one that is still reading makes it return busy, and the next idle moment
        tries again."""
        try:
            size = os.stat(f"{self.db_path}-wal").st_size
        except FileNotFoundError:
            return
        if size <= WAL_KEEP_BYTES:
            return
        conn = self.conn
        conn.execute("PRAGMA busy_timeout = 0")
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except sqlite3.OperationalError as exc:
            if "full" not in str(exc):  # still no space: the next idle moment tries again
                raise
        finally:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")

    def maintain(self, budget: int = 2000) -> Maintenance:
        indexed, more_index = self._index_pending(budget)
        collected, more_gc = self._collect_garbage(max(budget - indexed, 1))
        if not more_gc and self._index_has_deletes:
            more_gc = self._merge_index(max(budget // 4, 16))
        if not more_gc:
            more_gc = self._release_free_pages(max(budget, 16))
        if not more_gc:
            self._shrink_wal()
        if not (more_index or more_gc):
            # Idle: hand SQLite's page cache (up to cache_size, 32 MB) back (D13). Reads come through mmap;
            # the next writes take the pages they need again.
            self.conn.execute("PRAGMA shrink_memory")
        now = self.clock()
        if now - self._last_sweep >= rules.SWEEP_INTERVAL:
            self._last_sweep = now
            collected += self._sweep_unused_objects(older_than=now - rules.UNUSED_OBJECT_GRACE, budget=budget)
        return Maintenance(indexed=indexed, collected=collected, more=more_index or more_gc)

    def _sweep_unused_objects(self, *, older_than: float, budget: int) -> int:
        """Remove uploads that nothing came to reference (an attachment never sent) after a grace period."""
        with self._tx() as conn:
            unused = [
                row[0]
                for row in conn.execute(
                    "SELECT hash FROM objects o WHERE created_at < ? "
                    "AND NOT EXISTS (SELECT 1 FROM object_refs r WHERE r.obj = o.hash) LIMIT ?",
                    (older_than, budget),
                )
            ]
            conn.executemany("DELETE FROM objects WHERE hash = ?", [(h,) for h in unused])
        for object_hash in unused:
            self.objects.remove(object_hash)
        return len(unused)

    # -- objects ---------------------------------------------------------------------------------
    def put_object(self, data: bytes, *, media_type: str = "application/octet-stream") -> ObjectRef:
        try:
            object_hash = self.objects.put(data)
        except OSError as exc:
            raise self._translate(exc) from exc
        with self._tx() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO objects (hash, size, media_type, created_at) VALUES (?, ?, ?, ?)",
                (object_hash, len(data), media_type, self.clock()),
            )
        return ObjectRef(hash=object_hash, size=len(data), media_type=media_type)

    def object_bytes(self) -> int:
        row = self.conn.execute("SELECT COALESCE(SUM(size), 0) FROM objects").fetchone()
        return int(row[0])

    def read_object(self, object_hash: str) -> bytes:
        return self.objects.get(object_hash)
