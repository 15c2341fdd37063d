"""The model context's columns in SQL, written once for both SQL backends (their entries tables are the same).

A context item is ``(id, kind, text, payload)``: the payload is the entry's JSON for tool calls and results,
an interrupted answer and a user message with attachments (``carries_payload``), NULL for every other item.
The markers are searched as plain substrings (``instr`` / ``strpos``), exactly as ``carries_payload`` does
in Python: a ``LIKE '%…%'`` matched them too, but scanned each of the 45k assistant payloads of a 100k
context with a general pattern matcher.
"""

from __future__ import annotations

from anyy.domain.context import ATTACHED_MARK, CONTEXT_KINDS, DATA_KINDS, INTERRUPTED_MARK
from anyy.domain.entries import EntryKind

CONTEXT_KIND_LIST = ",".join(str(int(k)) for k in CONTEXT_KINDS)
_DATA_KIND_LIST = ",".join(str(int(k)) for k in DATA_KINDS)


def context_columns(alias: str, find: str) -> str:
    """``id, kind, text, payload`` of the entries aliased ``alias`` (``"e."`` or ``""``); ``find(haystack,
    needle)`` is the backend's substring position function (SQLite's ``instr``, PostgreSQL's ``strpos``)."""
    data = f"{alias}data"
    kind = f"{alias}kind"
    return (
        f"{alias}id, {kind}, {alias}text, CASE WHEN {kind} IN ({_DATA_KIND_LIST}) "
        f"OR ({kind} = {int(EntryKind.ASSISTANT)} AND {find}({data}, '{INTERRUPTED_MARK}') > 0) "
        f"OR ({kind} = {int(EntryKind.USER)} AND {find}({data}, '{ATTACHED_MARK}') > 0) THEN {data} END"
    )
