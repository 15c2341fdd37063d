"""Full-text search over messages, and the deferred indexing that keeps appends cheap.

New messages are indexed in batches by :meth:`maintain` (the owner thread runs it when idle) and
always before a search runs, so a search sees every committed message.
"""

from __future__ import annotations

from typing import Any

from anyy.domain import entry_ids
from anyy.domain.entries import SEARCHABLE_KINDS, EntryKind
from anyy.domain.paging import check_limit
from anyy.domain.search import SearchHit, fts_query, plain_snippet
from anyy.domain.sessions import SessionKind
from anyy.storage.rows import LAST_ENTRY_SQL
from anyy.storage.rules import check_kind
from anyy.storage.sqlite.core import StoreCore

SEARCHABLE = ",".join(str(int(k)) for k in sorted(SEARCHABLE_KINDS))
# Live sessions, and deleted ones once reclaimed: what is left of those is history a fork still holds.
_INDEXABLE = "num NOT IN (SELECT session_num FROM gc_queue)"


class SearchPart(StoreCore):
    def _index_pending(self, budget: int) -> tuple[int, bool]:
        """Index up to ``budget`` entries of sessions with unindexed messages; (indexed, more left)."""
        if self._unindexed is None:
            self._unindexed = {
                num
                for num, indexed, last in self.conn.execute(
                    f"SELECT num, indexed_seq, {LAST_ENTRY_SQL} FROM sessions WHERE {_INDEXABLE}"
                )
                if last is not None and entry_ids.seq_of(last) > indexed
            }
        unindexed = self._unindexed
        done = 0
        for num in sorted(unindexed):
            if done >= budget:
                return done, True
            with self._tx() as conn:
                row = conn.execute(
                    f"SELECT indexed_seq, {LAST_ENTRY_SQL} FROM sessions WHERE num = ? AND {_INDEXABLE}", (num,)
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
                # Large bodies live in objects/: the index gets their text from there.
                for entry_id, obj in conn.execute(
                    "SELECT id, obj FROM entries WHERE obj IS NOT NULL AND id BETWEEN ? AND ? "
                    f"AND kind IN ({SEARCHABLE})",
                    (entry_ids.make_entry_id(num, indexed + 1), entry_ids.make_entry_id(num, upto)),
                ).fetchall():
                    conn.execute(
                        "INSERT INTO entries_fts (rowid, text) VALUES (?, ?)", (entry_id, self._object_text(obj))
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
        where = ["entries_fts MATCH ?"]
        params: list[Any] = [fts_query(query)]
        scope: int | None = None
        if session_id is not None:
            # The session's whole conversation: its own entries and the history it inherited by forking.
            scope = self._session_num(session_id)
            intervals = self._tree_intervals(scope, self._head_of(scope))
            where.append("(" + " OR ".join("entries_fts.rowid BETWEEN ? AND ?" for _ in intervals) + ")")
            params += [bound for interval in intervals for bound in interval]
        while self._index_pending(50_000)[1]:
            pass
        cursor = self.conn.execute(
            "SELECT e.id, e.kind, snippet(entries_fts, 0, '[', ']', '…', 16), e.created_at, e.obj "
            "FROM entries_fts JOIN entries e ON e.id = entries_fts.rowid "
            f"WHERE {' AND '.join(where)} ORDER BY rank",
            params,
        )
        hits: list[SearchHit] = []
        holders = _Holders(self, scope)
        for entry_id, entry_kind, snippet, created, obj in cursor:
            info = holders.session_of(entry_id)
            if info is None or (kind is not None and info[2] != kind):
                continue
            hits.append(
                SearchHit(
                    session_id=info[0],
                    session_title=info[1],
                    session_kind=info[2],
                    entry_id=entry_id,
                    kind=EntryKind(entry_kind).label,
                    snippet=snippet if obj is None else plain_snippet(self._object_text(obj), query),
                    created_at=created,
                )
            )
            if len(hits) == limit:
                break
        cursor.close()
        return hits


class _Holders:
    """Which live session a hit is shown in (id, title, kind), remembered for the rest of the search: the
    author, or a fork that keeps it; unreachable leftovers of a deleted session (not reclaimed yet) are
    never shown. Within one session's search, that session."""

    def __init__(self, store: SearchPart, scope: int | None) -> None:
        self.store = store
        self.scope = scope
        self.sessions: dict[int, tuple[str, str, str] | None] = {}
        self.active: dict[int, bool] = {}

    def session_of(self, entry_id: int) -> tuple[str, str, str] | None:
        holder = self._holder(entry_id)
        if holder is None:
            return None
        if holder not in self.sessions:
            self.sessions[holder] = self.store._one("SELECT id, title, kind FROM sessions WHERE num = ?", (holder,))
        return self.sessions[holder]

    def _holder(self, entry_id: int) -> int | None:
        if self.scope is not None:
            return self.scope
        owner = entry_id >> entry_ids.SEQ_BITS
        if owner not in self.active:
            row = self.store._one("SELECT status = 'active' FROM sessions WHERE num = ?", (owner,))
            self.active[owner] = bool(row and row[0])
        if self.active[owner]:
            return owner  # a live session's own entries are always in its tree
        return self.store._live_holder(entry_id)
