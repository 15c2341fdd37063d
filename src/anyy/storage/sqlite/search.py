"""Full-text search over messages, and the deferred indexing that keeps appends cheap.

New messages are indexed in batches by :meth:`maintain` (the owner thread runs it when idle) and
always before a search runs, so a search sees every committed message.
"""

from __future__ import annotations

from typing import Any

from anyy.domain import entry_ids
from anyy.domain.entries import SEARCHABLE_KINDS, EntryKind
from anyy.domain.paging import check_limit
from anyy.domain.search import SearchHit, fts_query
from anyy.domain.sessions import SessionKind
from anyy.storage.sqlite.core import LAST_ENTRY_SQL, StoreCore
from anyy.storage.sqlite.sessions import check_kind

SEARCHABLE = ",".join(str(int(k)) for k in sorted(SEARCHABLE_KINDS))


class SearchPart(StoreCore):
    def index_pending(self, budget: int) -> tuple[int, bool]:
        """Index up to ``budget`` entries of sessions with unindexed messages; (indexed, more left)."""
        if self._unindexed is None:
            self._unindexed = {
                num
                for num, indexed, last in self.conn.execute(
                    f"SELECT num, indexed_seq, {LAST_ENTRY_SQL} FROM sessions WHERE status = 'active'"
                )
                if last is not None and entry_ids.seq_of(last) > indexed
            }
        unindexed = self._unindexed
        done = 0
        for num in sorted(unindexed):
            if done >= budget:
                return done, True
            with self.tx() as conn:
                row = conn.execute(
                    f"SELECT indexed_seq, {LAST_ENTRY_SQL} FROM sessions WHERE num = ? AND status = 'active'", (num,)
                ).fetchone()
                if row is None or row[1] is None or entry_ids.seq_of(row[1]) <= row[0]:
                    unindexed.discard(num)
                    continue
                indexed, last = row[0], entry_ids.seq_of(row[1])
                upto = min(last, indexed + budget - done)
                conn.execute(
                    "INSERT INTO entries_fts (rowid, text) SELECT id, text FROM entries "
                    f"WHERE id BETWEEN ? AND ? AND kind IN ({SEARCHABLE}) AND text IS NOT NULL",
                    (entry_ids.make_entry_id(num, indexed + 1), entry_ids.make_entry_id(num, upto)),
                )
                conn.execute("UPDATE sessions SET indexed_seq = ? WHERE num = ?", (upto, num))
            done += upto - indexed
            if upto >= last:
                unindexed.discard(num)
        return done, bool(unindexed)

    def search(
        self,
        query: str,
        *,
        kind: SessionKind | None = None,
        session_id: str | None = None,
        limit: int = 20,
    ) -> list[SearchHit]:
        check_kind(kind)
        check_limit(limit)
        match = fts_query(query)
        where = ["entries_fts MATCH ?", "s.status = 'active'"]
        params: list[Any] = [match]
        if kind is not None:
            where.append("s.kind = ?")
            params.append(kind)
        if session_id is not None:
            lo, hi = entry_ids.session_range(self.session_num(session_id))
            where.append("entries_fts.rowid BETWEEN ? AND ?")
            params += [lo, hi]
        while self.index_pending(50_000)[1]:
            pass
        rows = self.conn.execute(
            "SELECT s.id, s.title, s.kind, e.id, e.kind, "
            "snippet(entries_fts, 0, '[', ']', '…', 16), e.created_at "
            "FROM entries_fts JOIN entries e ON e.id = entries_fts.rowid "
            f"JOIN sessions s ON s.num = (e.id >> {entry_ids.SEQ_BITS}) "
            f"WHERE {' AND '.join(where)} ORDER BY rank LIMIT ?",
            (*params, limit),
        ).fetchall()
        return [
            SearchHit(
                session_id=sid,
                session_title=title,
                session_kind=skind,
                entry_id=eid,
                kind=EntryKind(ekind).label,
                snippet=snippet,
                created_at=created,
            )
            for sid, title, skind, eid, ekind, snippet, created in rows
        ]
