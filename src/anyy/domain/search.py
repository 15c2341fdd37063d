"""Full-text search: turning what a person typed into a safe FTS query, and the hits it returns."""

from __future__ import annotations

import re
import unicodedata

import msgspec

from anyy.domain.errors import InvalidInput

_PHRASE = re.compile(r'"([^"]*)"|(\S+)')
_WORD = re.compile(r"\w+", re.UNICODE)


def _accent_map() -> tuple[str, str]:
    """Latin letters with diacritics and the letter without them, as SQLite's ``remove_diacritics``
    folds them: every letter of Latin-1, Latin Extended-A/B and Latin Extended Additional whose canonical
    decomposition is one ASCII letter and combining marks."""
    accented, plain = [], []
    for code in (*range(0xC0, 0x250), *range(0x1E00, 0x1F00)):
        char = chr(code)
        parts = unicodedata.normalize("NFD", char)
        base, marks = parts[0], parts[1:]
        if marks and base.isascii() and base.isalpha() and all(unicodedata.combining(m) for m in marks):
            accented.append(char)
            plain.append(base)
    return "".join(accented), "".join(plain)


ACCENTED, UNACCENTED = _accent_map()
_FOLD = str.maketrans(ACCENTED, UNACCENTED)


def fold_accents(text: str) -> str:
    """``text`` with the diacritics of Latin letters removed (``café`` → ``cafe``), as search indexes it."""
    return text.translate(_FOLD)


class SearchHit(msgspec.Struct, kw_only=True):
    session_id: str
    session_title: str
    session_kind: str
    entry_id: int
    kind: str
    snippet: str
    created_at: float


def fts_query(text: str) -> str:
    """Every word must match (AND); ``"quoted words"`` match as a phrase; ``word*`` as a prefix.

    Operators and punctuation of the FTS syntax are never passed through, so no input is a syntax error.
    """
    parts: list[str] = []
    for phrase, word in _PHRASE.findall(text):
        if phrase:
            words = _WORD.findall(phrase)
            if words:
                parts.append('"' + " ".join(words) + '"')
            continue
        prefix = word.endswith("*")
        for token in _WORD.findall(word):
            parts.append(f'"{token}"')
        if prefix and parts and _WORD.findall(word):
            parts[-1] += "*"
    if not parts:
        raise InvalidInput("the search needs at least one word")
    return " ".join(parts)


def plain_snippet(text: str, query: str, width: int = 60) -> str:
    """A snippet around the first word of the query found in ``text``, marked like the index's own."""
    lowered = text.lower()
    for word in _WORD.findall(query):
        at = lowered.find(word.lower())
        if at >= 0:
            start, end = max(0, at - width), min(len(text), at + len(word) + width)
            before = ("…" if start else "") + text[start:at]
            after = text[at + len(word) : end] + ("…" if end < len(text) else "")
            return " ".join(f"{before}[{text[at : at + len(word)]}]{after}".split())
    return " ".join(text[: 2 * width].split()) + ("…" if len(text) > 2 * width else "")
