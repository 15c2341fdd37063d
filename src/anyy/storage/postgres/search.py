"""Full-text search with ``tsvector`` and a GIN index, with the SQLite store's query semantics.

Messages are indexed by upkeep in batches (``entry_words``), never on the append path, and always before a
search runs, so a search sees every committed message. The query is what ``fts_query`` accepts: every
word must match, ``"quoted words"`` as a phrase, ``word*`` as a prefix; words are lower-cased and not
stemmed (the ``simple`` configuration), and their accents folded, like SQLite's unicode61 tokenizer with
``remove_diacritics``: by ``fold_accents`` in Python, for the texts indexed as for the queries (PostgreSQL's
``translate`` with that map costs ~1 ms per message). Snippets mark what the search matched, folded the same
way (``plain_snippet``): PostgreSQL's ``ts_headline`` would not mark ``café`` for ``cafe``.
"""

from __future__ import annotations

from typing import Any

from anyy.domain import entry_ids
from anyy.domain.entries import SEARCHABLE_KINDS, EntryKind
from anyy.domain.paging import check_limit
from anyy.domain.search import SearchHit, fold_accents, plain_snippet, query_parts
from anyy.domain.sessions import SessionKind
from anyy.storage.postgres.core import PgCore
from anyy.storage.rows import LAST_ENTRY_SQL
from anyy.storage.rules import check_kind

SEARCHABLE = ",".join(str(int(k)) for k in sorted(SEARCHABLE_KINDS))
_INDEXABLE = "num NOT IN (SELECT session_num FROM gc_queue)"
_INSERT_WORDS = (
    "INSERT INTO entry_words (id, words) SELECT u.id, to_tsvector('simple', u.t) "
    "FROM unnest(%s::bigint[], %s::text[]) AS u(id, t) ON CONFLICT (id) DO NOTHING"
)


def ts_query_text(query: str) -> str:
    """The ``to_tsquery`` text of a search: each part of ``fts_query``'s output, its words quoted (so
    nothing is an operator) and followed by one another (``<->``), the last one a prefix when asked."""
    parts = []
    for words, prefix in query_parts(query):
        quoted = [f"'{word}'" for word in words]
        if prefix:
            quoted[-1] += ":*"
        parts.append("(" + " <-> ".join(quoted) + ")")
    return " & ".join(parts)


class SearchPart(PgCore):
    _unindexed: set[int] | None = None

    def _note_unindexed(self, num: int) -> None:
        if self._unindexed is not None:
            self._unindexed.add(num)

    def _index_pending(self, budget: int) -> tuple[int, bool]:
        """Index up to ``budget`` entries of sessions with unindexed messages; (indexed, more left)."""
        if self._unindexed is None:
            self._unindexed = {
                num
                for num, indexed, last in self._all(
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
                    f"SELECT indexed_seq, {LAST_ENTRY_SQL} FROM sessions WHERE num = %s AND {_INDEXABLE} FOR UPDATE",
                    (num,),
                ).fetchone()
                if row is None or row[1] is None or entry_ids.seq_of(row[1]) <= row[0]:
                    unindexed.discard(num)
                    continue
                indexed, last = row[0], entry_ids.seq_of(row[1])
                upto = min(last, indexed + budget - done)
                bounds = (entry_ids.make_entry_id(num, indexed + 1), entry_ids.make_entry_id(num, upto))
                self._index_range(*bounds)
                conn.execute("UPDATE sessions SET indexed_seq = %s WHERE num = %s", (upto, num))
            done += upto - indexed
            if upto >= last:
                unindexed.discard(num)
        return done, bool(unindexed)

    def _index_range(self, lo: int, hi: int) -> None:
        """Inside a transaction: the words of the messages ``lo``..``hi``, their accents folded here."""
        ids, texts = [], []
        for entry_id, text, obj in self.conn.execute(
            f"SELECT id, text, obj FROM entries WHERE id BETWEEN %s AND %s AND kind IN ({SEARCHABLE})", (lo, hi)
        ).fetchall():
            # Bodies stored as objects: their text comes from there (NUL, which tsvector cannot hold, as a space).
            body = text if obj is None else self._object_text(obj).replace("\x00", " ")
            if body is not None:
                ids.append(entry_id)
                texts.append(fold_accents(body))
        if ids:
            self.conn.execute(_INSERT_WORDS, (ids, texts))

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
        tsquery = ts_query_text(query)
        where = ["w.words @@ q.q"]
        params: list[Any] = []
        scope: int | None = None
        if session_id is not None:
            scope = self._session_num(session_id)
            intervals = self._tree_intervals(scope, self._head_of(scope))
            where.append("(" + " OR ".join("w.id BETWEEN %s AND %s" for _ in intervals) + ")")
            params += [bound for interval in intervals for bound in interval]
        while self._index_pending(50_000)[1]:
            pass
        hits: list[SearchHit] = []
        sessions: dict[int, tuple[str, str, str] | None] = {}
        page = max(limit * 2, 50)
        offset = 0
        while len(hits) < limit:
            # The author's row comes with each hit: one round trip for a page, whatever the sessions.
            rows = self._all(
                "SELECT e.id, e.kind, e.text, "
                "e.created_at, e.obj, o.status = 'active', o.id, o.title, o.kind "
                "FROM (SELECT to_tsquery('simple', %s) AS q) q "
                f"JOIN entry_words w ON {' AND '.join(where)} JOIN entries e ON e.id = w.id "
                f"LEFT JOIN sessions o ON o.num = e.id >> {entry_ids.SEQ_BITS} "
                "ORDER BY ts_rank(w.words, q.q) DESC, e.id LIMIT %s OFFSET %s",
                [tsquery, *params, page, offset],
            )
            for row in rows:
                hit = self._hit_of(row, query, scope=scope, kind=kind, sessions=sessions)
                if hit is not None:
                    hits.append(hit)
                    if len(hits) == limit:
                        break
            if len(rows) < page:
                break
            offset += page
        return hits

    def _hit_of(
        self,
        row: tuple[Any, ...],
        query: str,
        *,
        scope: int | None,
        kind: SessionKind | None,
        sessions: dict[int, tuple[str, str, str] | None],
    ) -> SearchHit | None:
        """One matching entry as a hit of the session that holds it (``None``: no live session in scope
        holds it, or not of the kind asked for). ``sessions`` caches (id, title, kind) by session number."""
        entry_id, entry_kind, text, created, obj, live, owner_id, title, owner_kind = row
        owner = entry_id >> entry_ids.SEQ_BITS
        if live:
            sessions[owner] = (owner_id, title, owner_kind)
        holder: int | None
        if scope is not None:
            holder = scope
        elif live:
            holder = owner  # a live session's own entries are always in its tree
        else:
            holder = self._live_holder(entry_id)
        if holder is None:
            return None
        if holder not in sessions:
            info_row = self._one("SELECT id, title, kind FROM sessions WHERE num = %s", (holder,))
            sessions[holder] = None if info_row is None else (info_row[0], info_row[1], info_row[2])
        info = sessions[holder]
        if info is None or (kind is not None and info[2] != kind):
            return None
        return SearchHit(
            session_id=info[0],
            session_title=info[1],
            session_kind=info[2],
            entry_id=entry_id,
            kind=EntryKind(entry_kind).label,
            snippet=plain_snippet(text if obj is None else self._object_text(obj), query),
            created_at=created,
        )
