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


_PART = re.compile(r'"([^"]*)"(\*?)')
SNIPPET_WORDS = 16  # words shown around the first match, as the SQLite index's snippet(…, 16)


def query_parts(query: str) -> list[tuple[list[str], bool]]:
    """What ``fts_query`` makes of a search, as (its words, accents folded as the index folds them, whether
    the last one is a prefix): one part per quoted phrase or word."""
    return [(words.split(), bool(prefix)) for words, prefix in _PART.findall(fold_accents(fts_query(query)))]


def _matches(tokens: list[str], at: int, words: list[str], prefix: bool) -> bool:
    if at + len(words) > len(tokens):
        return False
    last = len(words) - 1
    return all(
        tokens[at + i].startswith(word) if prefix and i == last else tokens[at + i] == word
        for i, word in enumerate(words)
    )


def plain_snippet(text: str, query: str, width: int = SNIPPET_WORDS) -> str:
    """A snippet of ``width`` words around the first match of the query in ``text``, each match marked
    ``[…]`` (a phrase as one mark), as the SQLite index's snippets are. Words match as the search matched
    them: case and accents folded (``cafe`` marks ``Café``), phrases as consecutive words, ``word*`` as a
    prefix."""
    spans = [match.span() for match in _WORD.finditer(text)]
    if not spans:
        return " ".join(text.split())
    ends = _marks(text, spans, query)  # first word of a mark -> its last word
    first = min(ends, default=0)
    start = max(0, min(first - width // 4, len(spans) - width))
    stop = min(len(spans), start + width)
    out = ["…" if start else ""]
    cursor, closing = spans[start][0], -1
    for index in range(start, stop):
        lo, hi = spans[index]
        out.append(text[cursor:lo])
        if index in ends and index > closing:
            out.append("[")
            closing = min(ends[index], stop - 1)
        out.append(text[lo:hi] + ("]" if index == closing else ""))
        cursor = hi
    out.append(text[cursor:] if stop == len(spans) else "…")
    return " ".join("".join(out).split())


def _marks(text: str, spans: list[tuple[int, int]], query: str) -> dict[int, int]:
    """Where the query matches the words at ``spans``: first word -> last word of each (overlaps merged)."""
    tokens = [fold_accents(text[lo:hi]).lower() for lo, hi in spans]
    found: list[tuple[int, int]] = []
    for words, prefix in query_parts(query):
        lowered = [word.lower() for word in words]
        found += [(at, at + len(lowered) - 1) for at in range(len(tokens)) if _matches(tokens, at, lowered, prefix)]
    ends: dict[int, int] = {}
    last_start = -1
    for lo, hi in sorted(found):
        if last_start >= 0 and lo <= ends[last_start]:
            ends[last_start] = max(ends[last_start], hi)
        else:
            ends[lo] = hi
            last_start = lo
    return ends
