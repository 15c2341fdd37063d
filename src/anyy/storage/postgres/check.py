"""``check`` (D11) of the PostgreSQL store: see :mod:`anyy.storage.checks` for what each check means.

The server keeps its own pages whole (its checksums, WAL replay): ``integrity`` here is the tree's links.
Objects live in the database, so there are no stray files; their bytes are checked against their hash by
the server (``sha256``), without reading them into the Gateway."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from anyy.domain import entry_ids
from anyy.domain.queue import outcome_for
from anyy.storage.checks import RECOVERY_NOTE, Finding, checks_to_run
from anyy.storage.postgres.queue import QueuePart
from anyy.storage.postgres.search import SEARCHABLE
from anyy.storage.postgres.upkeep import UpkeepPart

FINAL = "('completed', 'failed', 'interrupted', 'timed_out')"
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

    def _count(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        row = self._one(sql, params)
        return int(row[0]) if row else 0

    def _check_integrity(self, repair: bool) -> Finding:
        found = Finding(check="integrity")
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
            "SELECT count(*) FROM entry_words w WHERE NOT EXISTS (SELECT 1 FROM entries e WHERE e.id = w.id)"
        )
        found.add(stale, f"{stale} index rows for entries that do not exist")
        missing = self._count(
            f"SELECT count(*) FROM ({_INDEXED_ENTRIES}) m "
            "WHERE NOT EXISTS (SELECT 1 FROM entry_words w WHERE w.id = m.id)"
        )
        found.add(missing, f"{missing} messages missing from the search index")
        if repair and found.problems:
            with self._tx() as conn:
                conn.execute("DELETE FROM entry_words")
                conn.execute("UPDATE sessions SET indexed_seq = 0")
            self._unindexed = None
            while self._index_pending(50_000)[1]:
                pass
            found.repaired = found.problems
        return found

    def _check_objects(self, repair: bool) -> Finding:
        found = Finding(check="objects")
        dangling = [
            row[0]
            for row in self._all(
                "SELECT DISTINCT obj FROM (SELECT obj FROM object_refs UNION SELECT obj FROM entries "
                "WHERE obj IS NOT NULL) r WHERE NOT EXISTS (SELECT 1 FROM objects o WHERE o.hash = r.obj)"
            )
        ]
        found.add(len(dangling), f"{len(dangling)} referenced objects are not in the store, e.g. {dangling[:1]}")
        unref = self._all(
            "SELECT id, obj FROM entries e WHERE obj IS NOT NULL "
            "AND NOT EXISTS (SELECT 1 FROM object_refs r WHERE r.holder = e.id AND r.obj = e.obj)"
        )
        found.add(len(unref), f"{len(unref)} large bodies not counted as references (upkeep could remove them)")
        damaged = [
            row[0]
            for row in self._all(
                "SELECT hash FROM objects WHERE octet_length(body) <> size OR encode(sha256(body), 'hex') <> hash"
            )
        ]
        found.add(len(damaged), f"{len(damaged)} objects whose bytes do not match their hash, e.g. {damaged[:1]}")
        if repair and unref:
            with self._tx() as conn:
                conn.cursor().executemany(
                    "INSERT INTO object_refs (holder, obj) VALUES (%s, %s) ON CONFLICT DO NOTHING", unref
                )
            found.repaired = len(unref)
        return found

    def _check_executions(self, repair: bool) -> Finding:
        found = Finding(check="executions")
        rows = self._all(
            "SELECT e.id, x.lease_until IS NOT NULL AND x.lease_until >= clock_timestamp() "
            "FROM executions e JOIN sessions x ON x.num = e.session_num "
            "WHERE e.state IN ('running', 'retry_wait') AND x.status = 'active'"
        )
        # A session whose lease is live is being run by a Gateway of the cluster (on any host): its work
        # is that Gateway's, not a leftover.
        left = [execution_id for execution_id, leased in rows if not leased]
        leased = len(rows) - len(left)
        found.add(len(left), f"{len(left)} executions left running with no Gateway, e.g. {left[:1]}")
        if repair and left and not leased:
            found.repaired = len(self.recover_interrupted(RECOVERY_NOTE))
        elif repair and left:
            found.details.append(
                f"not repaired: {leased} other executions are run by a live Gateway of this database; "
                "stop every Gateway of the cluster first"
            )
        return found

    def _check_queue(self, repair: bool) -> Finding:
        found = Finding(check="queue")
        rows = self._all(
            "SELECT s.id, e.state FROM submissions s LEFT JOIN executions e ON e.id = s.execution_id "
            f"WHERE s.state IN ('taken', 'suspended') AND (e.id IS NULL OR e.state IN {FINAL})"
        )
        example = rows[0][0] if rows else ""
        found.add(len(rows), f"{len(rows)} queue items still taken by an execution that ended, e.g. {example}")
        if repair and rows:
            now = self.clock()
            with self._tx() as conn:
                conn.cursor().executemany(
                    "UPDATE submissions SET state = %s, version = version + 1, updated_at = %s WHERE id = %s",
                    [(outcome_for(state) if state else "interrupted", now, sid) for sid, state in rows],
                )
            found.repaired = len(rows)
        return found
