"""Full-text search with ``tsvector`` and a GIN index, with the SQLite store's query semantics.

Messages are indexed by upkeep in batches (``entry_words``), never on the append path, and always before a
search runs, so a search sees every committed message. The query is what ``fts_query`` accepts: every
word must match, ``"quoted words"`` as a phrase, ``word*`` as a prefix; words are lower-cased and not
stemmed (the ``simple`` configuration), and their accents folded, like SQLite's unicode61 tokenizer with
``remove_diacritics``.
"""

from __future__ import annotations

import re
from typing import Any

from anyy.domain import entry_ids
from anyy.domain.entries import SEARCHABLE_KINDS, EntryKind
from anyy.domain.paging import check_limit
from anyy.domain.search import ACCENTED, UNACCENTED, SearchHit, fold_accents, fts_query, plain_snippet
from anyy.domain.sessions import SessionKind
from anyy.storage.postgres.core import LAST_ENTRY_SQL, PgCore
from anyy.storage.rules import check_kind

SEARCHABLE = ",".join(str(int(k)) for k in sorted(SEARCHABLE_KINDS))
_INDEXABLE = "num NOT IN (SELECT session_num FROM gc_queue)"
_PART = re.compile(r'"([^"]*)"(\*?)')
_HEADLINE = "StartSel=[, StopSel=], MaxWords=16, MinWords=6, MaxFragments=1, FragmentDelimiter=…"
# Accents folded like SQLite's ``remove_diacritics`` (``café`` is found by ``cafe`` and the other way round):
# the indexed text through ``translate``, the query's words through the same map in Python.
INDEX_SQL = f"to_tsvector('simple', translate({{text}}, '{ACCENTED}', '{UNACCENTED}'))"


def ts_query_text(query: str) -> str:
    """The ``to_tsquery`` text of a search: each part of ``fts_query``'s output, its words quoted (so
    nothing is an operator) and followed by one another (``<->``), the last one a prefix when asked."""
    parts = []
    for words, prefix in _PART.findall(fold_accents(fts_query(query))):
        quoted = [f"'{word}'" for word in words.split()]
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
                conn.execute(
                    f"INSERT INTO entry_words (id, words) SELECT id, {INDEX_SQL.format(text='text')} FROM entries "
                    f"WHERE id BETWEEN %s AND %s AND kind IN ({SEARCHABLE}) AND text IS NOT NULL "
                    "ON CONFLICT (id) DO NOTHING",
                    bounds,
                )
                # Bodies stored as objects: their text comes from there (NUL, which tsvector cannot hold, as a space).
                for entry_id, obj in conn.execute(
                    "SELECT id, obj FROM entries WHERE obj IS NOT NULL AND id BETWEEN %s AND %s "
                    f"AND kind IN ({SEARCHABLE})",
                    bounds,
                ).fetchall():
                    conn.execute(
                        f"INSERT INTO entry_words (id, words) VALUES (%s, {INDEX_SQL.format(text='%s')}) "
                        "ON CONFLICT (id) DO NOTHING",
                        (entry_id, self._object_text(obj).replace("\x00", " ")),
                    )
                conn.execute("UPDATE sessions SET indexed_seq = %s WHERE num = %s", (upto, num))
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
                "SELECT e.id, e.kind, CASE WHEN e.obj IS NULL THEN ts_headline('simple', e.text, q.q, %s) END, "
                "e.created_at, e.obj, o.status = 'active', o.id, o.title, o.kind "
                "FROM (SELECT to_tsquery('simple', %s) AS q) q "
                f"JOIN entry_words w ON {' AND '.join(where)} JOIN entries e ON e.id = w.id "
                f"LEFT JOIN sessions o ON o.num = e.id >> {entry_ids.SEQ_BITS} "
                "ORDER BY ts_rank(w.words, q.q) DESC, e.id LIMIT %s OFFSET %s",
                [_HEADLINE, tsquery, *params, page, offset],
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
        entry_id, entry_kind, snippet, created, obj, live, owner_id, title, owner_kind = row
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
            snippet=snippet if obj is None else plain_snippet(self._object_text(obj), query),
            created_at=created,
        )
