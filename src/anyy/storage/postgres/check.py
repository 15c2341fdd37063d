"""``check`` (D11) of the PostgreSQL store: see :mod:`anyy.storage.checks` for what each check means.

The server keeps its own pages whole (its checksums, WAL replay): ``integrity`` here is the tree's links.
Objects live in the database, so there are no stray files; their bytes are checked against their hash by
the server (``sha256``), without reading them into the Gateway."""

from __future__ import annotations

from typing import Any

import psycopg

from anyy.storage.checks import RECOVERY_NOTE, Finding
from anyy.storage.checks_sql import ChecksSql
from anyy.storage.postgres.queue import QueuePart
from anyy.storage.postgres.upkeep import UpkeepPart


class CheckPart(QueuePart, UpkeepPart, ChecksSql):
    _index_ids = "entry_words"

    def _sql(self, text: str) -> str:
        return text.replace("?", "%s")

    def _empty_index(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute("DELETE FROM entry_words")

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
            found.repaired = sum(e.state != "running" for e in self.recover_interrupted(RECOVERY_NOTE))
        elif repair and left:
            found.details.append(
                f"not repaired: {leased} other executions are run by a live Gateway of this database; "
                "stop every Gateway of the cluster first"
            )
        return found
