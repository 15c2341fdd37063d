"""The decoded model context of active sessions, kept between model calls and extended as entries are
appended (issue 12 item 9).

Building a context from the store reads and decodes the whole kept path, and turning it into messages
walks it again: linear in the session's size, on every model call. The runtime keeps, per session, the
context and its messages as of a head, and at the next call asks the store only for the entries on the
path after that head (``history``, newest first, a few at a time). Entries are immutable and a path is
fixed by its head, so the kept context is valid exactly while the kept head is still on the session's
path: anything else (navigation to another branch, a compaction among the new entries, a gap too long
to be worth walking) builds the context again from the store. Whoever appended (this runtime, another
process on the same store) the result is the one ``SessionStore.context`` gives.

Memory is bounded: the least recently used sessions are dropped past ``max_sessions`` or ``max_bytes``
(an estimate: the texts, a fixed cost per item, the attachments' bytes and text).

Everything here runs on the store's thread (inside ``StoreOwner.call``) and uses the ``SessionStore``
protocol only.
"""

from __future__ import annotations

import bisect
import operator
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from anyy.domain.context import CONTEXT_KINDS, DATA_KINDS, ContextItem, ModelContext, Prefix, carries_payload
from anyy.domain.entries import AssistantData, Entry, EntryKind, Usage
from anyy.domain.model_io import AttachedPart, Message, MessageFold
from anyy.runtime.attachments import attachment_refs, context_attachments, part_size, read_attachments
from anyy.storage.protocol import SessionStore

# Kinds whose payload may go with the item (carries_payload says which do).
PAYLOAD_KINDS = frozenset((*DATA_KINDS, EntryKind.ASSISTANT, EntryKind.USER))

ITEM_OVERHEAD = 160  # bytes a kept item costs beside its text (tuple, ints, its message's share)
_MAX_GAP = 512  # entries appended since the kept head beyond which the context is built again
_encoder = msgspec.json.Encoder()
_text_of = operator.itemgetter(2)


@dataclass
class _Kept:
    """One session's context as of ``context.head``, with what extending it needs."""

    context: ModelContext  # its items: a Prefix of ``base``
    base: list[ContextItem]  # only ever grows (extensions append), so the contexts handed out stay as they were
    after_compaction: int  # index of the first item after the applied compaction
    usage: Usage | None  # of the newest response, if it came after the compaction
    usage_index: int | None  # index of that response
    chars: int  # characters of every item
    chars_after: int  # characters of the items after the newest response
    fold: MessageFold  # the messages of the items, images included
    messages: Sequence[Message] | None = None  # for this head, once asked
    size: int = 0

    def tokens(self) -> int:
        if self.usage is None or self.usage_index is None:
            return (len(self.context.summary or "") + self.chars) // 4
        return self.usage.context_tokens + self.usage.output + self.chars_after // 4


@dataclass
class CacheStats:
    hits: int = 0  # the head had not moved
    extended: int = 0  # entries appended since were added
    told: int = 0  # of which the runtime had told the entries (the store was not asked for them)
    built: int = 0  # built from the store (cold, navigation, compaction, long gap)


class ContextCache:
    """Per-session model contexts and messages, least recently used dropped first."""

    def __init__(self, *, max_sessions: int = 256, max_bytes: int = 256 * 2**20) -> None:
        self.max_sessions = max_sessions
        self.max_bytes = max_bytes
        self.stats = CacheStats()
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        self._fed: dict[str, list[Entry]] = {}  # entries the runtime appended since the last read
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """Bytes kept (the estimate the bound applies to)."""
        return self._bytes

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._kept

    def __len__(self) -> int:
        """Sessions whose context is kept."""
        return len(self._kept)

    def forget(self, session_id: str) -> None:
        """Drop a session's kept context (deleted, or to be read afresh)."""
        with self._lock:
            self._fed.pop(session_id, None)
            kept = self._kept.pop(session_id, None)
            if kept is not None:
                self._bytes -= kept.size

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._fed.clear()
            self._bytes = 0

    def appended(self, session_id: str, entries: Sequence[Entry]) -> None:
        """Entries the runtime just wrote (told by the Announcer, on any thread): the next read extends the
        kept context with them without asking the store, when they lead from the kept head to the head."""
        with self._lock:
            if session_id in self._kept:
                fed = self._fed.setdefault(session_id, [])
                fed += entries
                if len(fed) > _MAX_GAP:
                    del fed[: len(fed) - _MAX_GAP]

    def context(self, store: SessionStore, session_id: str) -> ModelContext:
        """The session's model context, as ``store.context(session_id)`` gives it (on the store thread)."""
        head = store.get_session(session_id).head
        with self._lock:
            kept = self._kept.get(session_id)
            if kept is not None and kept.context.head == head:
                self.stats.hits += 1
                self._kept.move_to_end(session_id)
                return kept.context
            fresh = self._extended(store, session_id, kept, head) if kept is not None else None
            if fresh is None:
                self.stats.built += 1
                fresh = _build(store, session_id)
            else:
                self.stats.extended += 1
            self._keep(session_id, kept, fresh)
            return fresh.context

    def messages(self, store: SessionStore, session_id: str, context: ModelContext) -> Sequence[Message]:
        """``context`` as provider-neutral messages, images included: the kept ones when ``context`` is the
        session's kept context, otherwise converted now."""
        with self._lock:
            kept = self._kept.get(session_id)
            if kept is None or kept.context is not context:
                fold = MessageFold(context.summary)
                fold.feed(context.items, context_attachments(store, session_id, context))
                return fold.messages()
            if kept.messages is None:
                kept.messages = kept.fold.messages()
            return kept.messages

    # -- internals (under the lock) --------------------------------------------------------------
    def _keep(self, session_id: str, old: _Kept | None, fresh: _Kept) -> None:
        if old is not None:
            self._bytes -= old.size
        self._kept[session_id] = fresh
        self._kept.move_to_end(session_id)
        self._bytes += fresh.size
        while self._kept and (len(self._kept) > self.max_sessions or self._bytes > self.max_bytes):
            dropped, kept = self._kept.popitem(last=False)
            self._fed.pop(dropped, None)
            self._bytes -= kept.size

    def _extended(self, store: SessionStore, session_id: str, kept: _Kept, head: int | None) -> _Kept | None:
        """``kept`` with the entries appended since its head, or ``None`` when it must be built again."""
        fed = self._fed.pop(session_id, [])
        newer = _chain(fed, kept.context.head, head)
        if newer is None:
            newer = _since(store, session_id, kept.context.head)
        else:
            self.stats.told += 1
        if newer is None or any(entry.kind == EntryKind.COMPACTION for entry in newer):
            return None
        return _extend(store, kept, newer, head)


def _chain(fed: list[Entry], kept_head: int | None, head: int | None) -> list[Entry] | None:
    """The entries of ``fed`` that lead from ``kept_head`` to ``head``, parent to child, if they do."""
    start = next((index for index, entry in enumerate(fed) if entry.parent == kept_head), None)
    if start is None:
        return None
    chain = [fed[start]]
    for entry in fed[start + 1 :]:
        if entry.parent != chain[-1].id:
            break
        chain.append(entry)
    return chain if chain[-1].id == head else None


def _since(store: SessionStore, session_id: str, head: int | None) -> list[Entry] | None:
    """The entries on the session's path after ``head``, oldest first; ``None`` when ``head`` is not on
    the path any more (or the gap is long). Ids grow along a path, so the walk stops at a smaller id."""
    newer: list[Entry] = []
    cursor: str | None = None
    limit = 8
    while len(newer) <= _MAX_GAP:
        page = store.history(session_id, limit=limit, cursor=cursor)
        for entry in page.items:
            if entry.id == head:
                return newer[::-1]
            if head is not None and entry.id < head:
                return None
            newer.append(entry)
        if page.next_cursor is None:
            return newer[::-1] if head is None else None
        cursor, limit = page.next_cursor, 64
    return None


def _extend(store: SessionStore, kept: _Kept, newer: list[Entry], head: int | None) -> _Kept:
    items = kept.base
    added: list[ContextItem] = []
    images: dict[int, tuple[AttachedPart, ...]] = {}
    last_model = kept.context.last_model
    usage, usage_index, chars, chars_after = kept.usage, kept.usage_index, kept.chars, kept.chars_after
    size = kept.size
    for entry in newer:
        if entry.kind not in CONTEXT_KINDS:
            continue
        raw = _encoder.encode(entry.data).decode() if entry.kind in PAYLOAD_KINDS else None
        raw = raw if carries_payload(entry.kind, raw) else None  # as the store gives it (an interrupted answer…)
        item: ContextItem = (entry.id, int(entry.kind), entry.text, raw)
        added.append(item)
        chars += len(entry.text)
        size += len(entry.text) + ITEM_OVERHEAD
        if entry.kind == EntryKind.ASSISTANT:
            response = msgspec.convert(entry.data, AssistantData)
            last_model = (response.provider, response.model) if response.provider or response.model else None
            usage, usage_index, chars_after = response.usage, len(items) + len(added) - 1, 0
        else:
            chars_after += len(entry.text)
        if entry.kind == EntryKind.USER:
            refs = attachment_refs(entry.data)
            if refs:
                images[entry.id] = read_attachments(store, refs)
                size += sum(map(part_size, images[entry.id]))
    items += added  # in place: the contexts handed out before are prefixes, and stay as they were
    kept.fold.feed(added, images)
    fresh = _Kept(
        base=items,
        context=ModelContext(
            items=Prefix(items),
            summary=kept.context.summary,
            compaction=kept.context.compaction,
            head=head,
            tokens=0,
            last_model=last_model,
        ),
        after_compaction=kept.after_compaction,
        usage=usage,
        usage_index=usage_index,
        chars=chars,
        chars_after=chars_after,
        fold=kept.fold,
        size=size,
    )
    fresh.context.tokens = fresh.tokens()
    return fresh


def _chars(items: Sequence[ContextItem]) -> int:
    """Characters of the items' texts (one pass in C: a 100k context is read whole when it is built)."""
    return sum(map(len, map(_text_of, items)))


def _build(store: SessionStore, session_id: str) -> _Kept:
    """A session's context from the store, with what extending it needs."""
    built = store.context(session_id)
    items = list(built.items)
    context = msgspec.structs.replace(built, items=Prefix(items))
    # Ids grow along a path: the items before the applied compaction have smaller ids.
    after = 0 if context.compaction is None else bisect.bisect_left([item[0] for item in items], context.compaction)
    last = next((index for index in range(len(items) - 1, -1, -1) if items[index][1] == EntryKind.ASSISTANT), None)
    usage = usage_index = None
    chars = _chars(items)
    chars_after = chars
    if last is not None:
        chars_after = _chars(items[last + 1 :])
        if last >= after:
            usage_index = last
            usage = msgspec.convert(store.get_entry(session_id, items[last][0]).data, AssistantData).usage
    images = context_attachments(store, session_id, context)
    fold = MessageFold(context.summary)
    fold.feed(items, images)
    size = chars + ITEM_OVERHEAD * len(items) + sum(part_size(part) for parts in images.values() for part in parts)
    return _Kept(
        context=context,
        base=items,
        after_compaction=after,
        usage=usage,
        usage_index=usage_index,
        chars=chars,
        chars_after=chars_after,
        fold=fold,
        size=size,
    )
