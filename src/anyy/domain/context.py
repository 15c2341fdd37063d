"""Building the model context: the path from the root to the head, honouring the newest compaction.

The store hands over the path as *runs*: contiguous id intervals, root first (see ``entry_ids``). Only
the compaction entries on the path are looked at before any text is loaded, so the work is linear in
the context that is kept, not in the size of the tree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, TypeVar, overload

import msgspec

from anyy.domain.entries import AssistantData, CompactionData, EntryKind, Usage

Run = tuple[int, int]  # inclusive id interval, low to high
# One item of the context, exactly as the store loads it: id, kind, text, and the JSON payload of tool
# calls and tool results (None for other kinds). Rows are used as they come, with no per-item work in
# Python, because a long session's context is loaded on every turn; adapters decode tool payloads.
ContextItem = tuple[int, int, str, str | None]

# Kinds sent to the model; a compaction travels as the context's summary, labels and notices not at all.
CONTEXT_KINDS: tuple[EntryKind, ...] = (
    EntryKind.USER,
    EntryKind.ASSISTANT,
    EntryKind.TOOL_CALL,
    EntryKind.TOOL_RESULT,
    EntryKind.BRANCH_SUMMARY,
)
DATA_KINDS: tuple[EntryKind, ...] = (EntryKind.TOOL_CALL, EntryKind.TOOL_RESULT)
# An assistant message cut short (a stop, a crash) carries its payload too, so the model is told (D4).
INTERRUPTED_MARK = '"interrupted":true'


# A user message with attachments carries its payload too: its images go to the model with it (N5), read
# with the context rather than entry by entry.
ATTACHED_MARK = '"attachments":['


def interrupted_answer(kind: int, raw_data: str | None) -> bool:
    """An assistant entry recorded as interrupted (its payload as encoded: compact JSON)."""
    return kind == EntryKind.ASSISTANT and raw_data is not None and INTERRUPTED_MARK in raw_data


def carries_payload(kind: int, raw_data: str | None) -> bool:
    """Whether a context item keeps its entry's payload: tool calls and results, an interrupted answer, a
    user message with attachments (every store and the runtime's kept context agree on this)."""
    if kind in DATA_KINDS:
        return True
    if raw_data is None:
        return False
    if kind == EntryKind.ASSISTANT:
        return INTERRUPTED_MARK in raw_data
    return kind == EntryKind.USER and ATTACHED_MARK in raw_data


T = TypeVar("T")


class Prefix(Sequence[T]):
    """The first ``count`` values of an append-only list, then ``tail``: a snapshot made in O(1).

    The runtime keeps a session's context items and messages in lists that only ever grow, and hands out
    prefixes of them: what a caller holds never changes, and no model call copies the whole context."""

    __slots__ = ("_base", "_count", "_tail")

    def __init__(self, base: list[T], count: int | None = None, tail: Sequence[T] = ()) -> None:
        self._base = base
        self._count = len(base) if count is None else count
        self._tail = tuple(tail)

    def __len__(self) -> int:
        return self._count + len(self._tail)

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("context index out of range")
        return self._base[index] if index < self._count else self._tail[index - self._count]

    def __iter__(self) -> Iterator[T]:
        yield from islice(self._base, self._count)
        yield from self._tail

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Sequence)
            and len(other) == len(self)
            and all(a == b for a, b in zip(self, other, strict=True))
        )

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"Prefix({list(self)!r})"


class ModelContext(msgspec.Struct, kw_only=True):
    """What the next model call re-reads, minus the system prompt (role, Soul and memory)."""

    items: Sequence[ContextItem]  # a list from a store; a Prefix of the runtime's kept list
    summary: str | None  # the applied compaction's summary, to be sent before the items
    compaction: int | None  # the applied compaction entry
    head: int | None
    tokens: int  # estimate: last response's reported usage + chars/4 for what came after
    last_model: tuple[str, str] | None = None  # provider and model of the last response (the M2 fallback)


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


def last_response_index(items: Sequence[ContextItem], start: int = 0) -> int | None:
    """Index of the newest assistant message at or after ``start``: its reported usage anchors the
    token estimate. Only responses made after the applied compaction count (``start``): earlier ones
    re-read the context as it was before it was summarised."""
    for index in range(len(items) - 1, start - 1, -1):
        if items[index][1] == EntryKind.ASSISTANT:
            return index
    return None


def estimate_tokens(
    items: Sequence[ContextItem], summary: str | None, usage: Usage | None, usage_index: int | None
) -> int:
    """Reported usage of the last response, plus a quarter of the characters that came after it."""
    if usage is None or usage_index is None:
        return (len(summary or "") + sum(len(item[2]) for item in items)) // 4
    after = sum(len(item[2]) for item in items[usage_index + 1 :])
    return usage.context_tokens + usage.output + after // 4


def assemble_context(
    items: list[ContextItem],
    *,
    summary: str | None,
    compaction: int | None,
    head: int | None,
    after_compaction: int,
    response_data: Callable[[int], str | bytes | None],
) -> ModelContext:
    """The context from its items (and the applied compaction's summary): the last response's model, and
    the token estimate anchored on that response's usage when it came after the compaction.
    ``response_data(entry_id)`` is the stored payload of an assistant entry."""
    usage = None
    last_model = None
    usage_index = last_response_index(items, after_compaction)
    last_index = last_response_index(items)
    if last_index is not None:
        raw = response_data(items[last_index][0])
        if raw:
            response = msgspec.json.decode(raw, type=AssistantData)
            if response.provider or response.model:
                last_model = (response.provider, response.model)
            if usage_index == last_index:
                usage = response.usage
    return ModelContext(
        items=items,
        summary=summary,
        compaction=compaction,
        head=head,
        tokens=estimate_tokens(items, summary, usage, usage_index),
        last_model=last_model,
    )


def tool_payload(item: ContextItem) -> dict[str, Any]:
    """The decoded payload of a tool call or tool result item."""
    return {} if item[3] is None else _any_decoder.decode(item[3])


_any_decoder = msgspec.json.Decoder(dict[str, Any])
