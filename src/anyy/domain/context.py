"""Building the model context: the path from the root to the head, honouring the newest compaction.

The store hands over the path as *runs*: contiguous id intervals, root first (see ``entry_ids``). Only
the compaction entries on the path are looked at before any text is loaded, so the work is linear in
the context that is kept, not in the size of the tree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from anyy.domain.entries import CompactionData, EntryKind, Usage

Run = tuple[int, int]  # inclusive id interval, low to high
# One row of the path as the store loads it: id, kind, text, data (JSON, tool kinds only), object hash.
ContextRow = tuple[int, int, str | None, str | None, str | None]
# One item of the built context: id, kind, text, data (tool kinds only).
ContextItem = tuple[int, int, str, dict[str, Any] | None]

CONTEXT_KINDS: tuple[EntryKind, ...] = (
    EntryKind.USER,
    EntryKind.ASSISTANT,
    EntryKind.TOOL_CALL,
    EntryKind.TOOL_RESULT,
    EntryKind.BRANCH_SUMMARY,
)
DATA_KINDS: tuple[EntryKind, ...] = (EntryKind.TOOL_CALL, EntryKind.TOOL_RESULT)


class ModelContext(msgspec.Struct, kw_only=True):
    """What the next model call re-reads, minus the system prompt (role, Soul and memory)."""

    items: list[ContextItem]
    summary: str | None  # the applied compaction's summary, to be sent before the items
    compaction: int | None  # the applied compaction entry
    head: int | None
    tokens: int  # estimate: last response's reported usage + chars/4 for what came after


def newest_on_path(runs: Sequence[Run], candidates: Iterable[int]) -> int | None:
    """Of the candidate ids (all on the path), the one nearest the head."""
    best: tuple[int, int] | None = None
    for cid in candidates:
        for index, (lo, hi) in enumerate(runs):
            if lo <= cid <= hi:
                key = (index, cid)
                if best is None or key > best:
                    best = key
                break
    return None if best is None else best[1]


def runs_from(runs: Sequence[Run], first: int) -> list[Run]:
    """The part of the path from ``first`` (inclusive) to the head. An id off the path keeps it all."""
    for index, (lo, hi) in enumerate(runs):
        if lo <= first <= hi:
            return [(first, hi), *runs[index + 1 :]]
    return list(runs)


def compaction_cut(data_raw: str | bytes) -> int:
    return msgspec.json.decode(data_raw, type=CompactionData).first_kept


_any_decoder = msgspec.json.Decoder(dict[str, Any])


def assemble(
    rows: list[ContextRow],
    *,
    compaction: int | None,
    summary: str | None,
    head: int | None,
    last_usage: Usage | None,
    last_usage_entry: int | None,
) -> ModelContext:
    """Turn loaded rows (root to head, texts of object bodies already filled in) into a context.

    The applied compaction entry itself and older compactions inside the kept part are left out; the
    summary travels separately so that a provider can place it first.
    """
    items: list[ContextItem] = []
    append = items.append
    decode = _any_decoder.decode
    tool_call = EntryKind.TOOL_CALL
    tool_result = EntryKind.TOOL_RESULT
    chars_after_usage = 0
    counting = last_usage_entry is None
    for entry_id, kind, text, data, _object in rows:
        if kind in (tool_call, tool_result):
            append((entry_id, kind, text or "", decode(data) if data else {}))
        elif kind != EntryKind.COMPACTION:
            append((entry_id, kind, text or "", None))
        else:
            continue
        if counting:
            chars_after_usage += len(text or "")
        elif entry_id == last_usage_entry:
            counting = True
    if last_usage is None:
        chars_after_usage += len(summary or "")
        tokens = chars_after_usage // 4
    else:
        tokens = last_usage.context_tokens + last_usage.output + chars_after_usage // 4
    return ModelContext(items=items, summary=summary, compaction=compaction, head=head, tokens=tokens)
