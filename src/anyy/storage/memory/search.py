"""Full-text search without an index: the same query language and the same hits as the SQLite backend's
FTS5 (``unicode61 remove_diacritics 2``): case and diacritics folded, every phrase must match, ``*`` a prefix.
"""

from __future__ import annotations

import re
import unicodedata

from anyy.domain.entries import SEARCHABLE_KINDS
from anyy.domain.paging import check_limit
from anyy.domain.search import SearchHit, fts_query, plain_snippet
from anyy.domain.sessions import SessionKind
from anyy.storage import rules
from anyy.storage.memory.core import MemoryCore
from anyy.storage.memory.data import SessionRecord

_PHRASE = re.compile(r'"([^"]*)"(\*?)')


_WORD = re.compile(r"[^\W_]+")  # letters and digits; everything else separates words, as in unicode61


def _folded(word: str) -> str:
    if word.isascii():
        return word.lower()
    return "".join(c for c in unicodedata.normalize("NFD", word) if unicodedata.category(c) != "Mn").lower()


def tokens(text: str) -> list[str]:
    """Words as unicode61 cuts them, case and diacritics folded."""
    return [folded for word in _WORD.findall(text) if (folded := _folded(word))]


def _matches(words: list[str], phrase: list[str], prefix: bool) -> bool:
    size = len(phrase)
    for start in range(len(words) - size + 1):
        window = words[start : start + size]
        if window[:-1] == phrase[:-1] and (window[-1].startswith(phrase[-1]) if prefix else window[-1] == phrase[-1]):
            return True
    return False


class SearchPart(MemoryCore):
    def search(
        self,
        query: str,
        *,
        kind: SessionKind | None = None,
        session_id: str | None = None,
        limit: int = 20,
    ) -> list[SearchHit]:
        self._check_open()
        rules.check_kind(kind)
        check_limit(limit)
        phrases = [(tokens(text), bool(star)) for text, star in _PHRASE.findall(fts_query(query))]
        phrases = [(words, prefix) for words, prefix in phrases if words]
        scope: SessionRecord | None = None
        candidates: list[int]
        if session_id is not None:
            scope = self._record(session_id)
            candidates = sorted(self._tree_ids(scope))
        else:
            candidates = sorted(self.data.entries)
        hits: list[SearchHit] = []
        if not phrases:
            return hits
        for entry_id in reversed(candidates):  # newest first
            entry = self.data.entries[entry_id].entry
            if entry.kind not in SEARCHABLE_KINDS:
                continue
            words = self._words.get(entry_id)
            if words is None:
                words = self._words[entry_id] = tokens(entry.text)  # entries never change: cut once
            if not all(_matches(words, phrase, prefix) for phrase, prefix in phrases):
                continue
            holder = scope or self._live_holder(entry_id)
            if holder is None or (kind is not None and holder.session.kind != kind):
                continue
            hits.append(
                SearchHit(
                    session_id=holder.session.id,
                    session_title=holder.session.title,
                    session_kind=holder.session.kind,
                    entry_id=entry_id,
                    kind=entry.kind.label,
                    snippet=plain_snippet(entry.text, query),
                    created_at=entry.created_at,
                )
            )
            if len(hits) == limit:
                break
        return hits
