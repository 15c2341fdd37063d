"""The runtime keeps active sessions' decoded contexts and extends them with what was appended (issue 12
item 9): what a model call gets is always what the store would build, on every backend, whoever wrote."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import msgspec
import pytest

from anyy.domain.context import ModelContext
from anyy.domain.entries import (
    AssistantData,
    Attachment,
    CompactionData,
    EntryKind,
    NewEntry,
    ToolCallData,
    ToolResultData,
    Usage,
    UserData,
)
from anyy.domain.model_io import Message, ToolCallEvent, context_to_messages
from anyy.domain.sessions import NewSession
from anyy.runtime.attachments import context_attachments
from anyy.runtime.contexts import ContextCache
from anyy.storage.protocol import SessionStore
from tests.conformance.backends import BACKENDS
from tests.runtime.harness import Harness

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64


@pytest.fixture(params=sorted(BACKENDS))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionStore]:
    if request.param == "postgresql":
        from tests.postgres.server import require_postgres

        require_postgres()
    opened = BACKENDS[request.param](tmp_path)
    yield opened
    opened.close()


class Counting:
    """The store, counting how often the whole context is built."""

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner
        self.built = 0
        self.asked = 0
        self.entries_read = 0

    def context(self, session_id: str) -> ModelContext:
        self.built += 1
        return self.inner.context(session_id)

    def history(self, session_id: str, **page: Any) -> Any:
        self.asked += 1
        return self.inner.history(session_id, **page)

    def get_entry(self, session_id: str, entry_id: int) -> Any:
        self.entries_read += 1
        return self.inner.get_entry(session_id, entry_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _plain(context: ModelContext) -> dict[str, Any]:
    """A context with tool payloads decoded (backends may spell the same JSON differently)."""
    items = [(i, k, t, None if d is None else msgspec.json.decode(d)) for i, k, t, d in context.items]
    return {**msgspec.structs.asdict(context), "items": items}


def _same(cache: ContextCache, store: SessionStore, session_id: str) -> ModelContext:
    kept = cache.context(store, session_id)
    plain = store.inner if isinstance(store, Counting) else store  # the check does not count
    expected = plain.context(session_id)
    assert _plain(kept) == _plain(expected)
    messages: Sequence[Message] = cache.messages(store, session_id, kept)
    assert list(messages) == context_to_messages(expected, context_attachments(plain, session_id, expected))
    return kept


def _turn(store: SessionStore, session_id: str, n: int, *, usage: int = 0) -> None:
    call = f"c{n}"
    store.append_entries(
        session_id,
        [
            NewEntry(kind=EntryKind.USER, text=f"question {n} " + "x" * n),
            NewEntry(
                kind=EntryKind.ASSISTANT,
                text=f"answer {n}",
                data=AssistantData(provider="p", model=f"m{n}", usage=Usage(input=usage, output=7) if usage else None),
            ),
            NewEntry(kind=EntryKind.TOOL_CALL, data=ToolCallData(call_id=call, name="echo", arguments={"n": n})),
            NewEntry(kind=EntryKind.TOOL_RESULT, text=f"result {n}", data=ToolResultData(call_id=call, name="echo")),
            NewEntry(kind=EntryKind.NOTICE, text="not for the model"),
        ],
    )


def test_a6_extended_context_equals_the_stores_whoever_appended(store: SessionStore) -> None:
    counting = cast(SessionStore, Counting(store))
    cache = ContextCache()
    session = store.create_session(NewSession())
    _same(cache, counting, session.id)  # empty
    for n in range(6):
        _turn(store, session.id, n, usage=100 * n)  # written beside the cache, as another Gateway would
        _same(cache, counting, session.id)
    image = store.put_object(PNG, media_type="image/png")
    attached = UserData(attachments=[Attachment(object=image.hash, name="a.png", media_type="image/png")])
    store.append_entries(session.id, [NewEntry(kind=EntryKind.USER, text="see" + "y" * 70_000, data=attached)])
    kept = _same(cache, counting, session.id)
    assert cache.messages(counting, session.id, kept)[-1].images  # type: ignore[union-attr]
    assert cast(Counting, counting).built == 1  # the first read only: then the entries appended since, never all
    assert cache.stats.built == 1
    assert cache.stats.extended == 7
    _same(cache, counting, session.id)
    assert cache.stats.hits == 1


def test_n5_a_contexts_images_come_with_it_not_entry_by_entry(store: SessionStore) -> None:
    """The user messages' image attachments are in the context the store builds: a full build of a long
    conversation reads no entry one by one (it read every user entry once, then kept a table of them
    that grew or, bounded, missed at every rebuild of a long one — D13)."""
    counting = Counting(store)
    session = store.create_session(NewSession())
    store.append_entries(session.id, [NewEntry(kind=EntryKind.USER, text=f"message {n}") for n in range(300)])
    image = store.put_object(PNG, media_type="image/png")
    attached = UserData(attachments=[Attachment(object=image.hash, name="a.png", media_type="image/png")])
    text = UserData(attachments=[Attachment(object=image.hash, name="notes.txt", media_type="text/plain")])
    store.append_entries(
        session.id,
        [
            NewEntry(kind=EntryKind.USER, text="see", data=attached),
            NewEntry(kind=EntryKind.USER, text="read", data=text),
        ],
    )
    for _ in range(2):  # a new cache each time: the whole context built again
        cache = ContextCache()
        kept = cache.context(cast(SessionStore, counting), session.id)
        messages = cache.messages(cast(SessionStore, counting), session.id, kept)
        with_images = [m for m in messages if getattr(m, "images", ())]
        assert [m.text for m in with_images] == ["see"]
    assert counting.entries_read == 0


def test_a6_entries_the_runtime_wrote_extend_without_asking_the_store(store: SessionStore) -> None:
    counting = Counting(store)
    cache = ContextCache()
    session = store.create_session(NewSession())
    _turn(store, session.id, 0)
    earlier = _same(cache, cast(SessionStore, counting), session.id)
    handed = cache.messages(store, session.id, earlier)
    earlier_items, earlier_messages = list(earlier.items), list(handed)
    for n in range(1, 4):
        appended = store.append_entries(session.id, [NewEntry(kind=EntryKind.USER, text=f"q{n}")])
        appended += store.append_entries(
            session.id, [NewEntry(kind=EntryKind.ASSISTANT, text=f"a{n}", data=AssistantData(model="m"))]
        )
        cache.appended(session.id, appended)  # what the Announcer does after each write
        _same(cache, cast(SessionStore, counting), session.id)
    assert (counting.built, counting.asked) == (1, 0)
    # What was handed out before is a snapshot: the kept lists grew in place, it did not.
    assert list(earlier.items) == earlier_items
    assert list(handed) == earlier_messages
    assert cache.stats.told == 3
    lost = store.append_entries(session.id, [NewEntry(kind=EntryKind.USER, text="written elsewhere")])
    cache.appended(session.id, store.append_entries(session.id, [NewEntry(kind=EntryKind.USER, text="told")]))
    assert lost
    _same(cache, cast(SessionStore, counting), session.id)  # what was told does not reach the kept head
    assert counting.asked >= 1
    assert cache.stats.told == 3
    # Told entries that lead from the kept head, then more written elsewhere after them: asked again.
    cache.appended(session.id, store.append_entries(session.id, [NewEntry(kind=EntryKind.USER, text="told too")]))
    store.append_entries(session.id, [NewEntry(kind=EntryKind.USER, text="and one more from elsewhere")])
    _same(cache, cast(SessionStore, counting), session.id)
    assert cache.stats.told == 3


def test_a6_navigation_and_compaction_build_the_context_again(store: SessionStore) -> None:
    cache = ContextCache()
    session = store.create_session(NewSession())
    for n in range(4):
        _turn(store, session.id, n, usage=50)
    _same(cache, store, session.id)
    path = store.path(session.id)
    store.set_head(session.id, path[6].id)  # back to an earlier point: the kept head is off the path
    _same(cache, store, session.id)
    assert cache.stats.built == 2
    _turn(store, session.id, 9)  # a new branch from there: extended
    _same(cache, store, session.id)
    assert cache.stats.extended == 1
    first_kept = store.path(session.id)[5].id
    store.append_entries(
        session.id,
        [NewEntry(kind=EntryKind.COMPACTION, text="the summary", data=CompactionData(first_kept=first_kept))],
    )
    assert _same(cache, store, session.id).summary == "the summary"
    assert cache.stats.built == 3
    _turn(store, session.id, 10, usage=900)  # after a compaction the usage anchors the estimate again
    assert _same(cache, store, session.id).tokens > 900
    assert cache.stats.extended == 2


def test_a6_memory_is_bounded_least_recently_used_first(store: SessionStore) -> None:
    cache = ContextCache(max_sessions=2)
    ids = [store.create_session(NewSession()).id for _ in range(3)]
    for session_id in ids:
        _turn(store, session_id, 1)
        cache.context(store, session_id)
    assert ids[0] not in cache
    assert ids[1] in cache
    assert ids[2] in cache
    cache.context(store, ids[1])  # used: now the newest
    cache.context(store, ids[0])
    assert ids[2] not in cache
    assert ids[1] in cache
    small = ContextCache(max_bytes=4_000)
    for session_id in ids:
        small.context(store, session_id)
        assert small.size <= 4_000
    big = store.create_session(NewSession())
    store.append_entries(big.id, [NewEntry(kind=EntryKind.USER, text="z" * 10_000)])
    assert _plain(small.context(store, big.id)) == _plain(store.context(big.id))  # still answered, not kept
    assert big.id not in small
    assert small.size == 0
    small.forget(ids[0])


def test_a6_a_hundred_active_sessions_stay_kept(store: SessionStore) -> None:
    """The default bound holds the runtime benchmark's 100 sessions working at once: read in turn, each
    is built once, then found (a bound below that rebuilt every context at every model call)."""
    cache = ContextCache()
    ids = [store.create_session(NewSession()).id for _ in range(100)]
    for session_id in ids:
        _turn(store, session_id, 1)
    for _ in range(2):
        for session_id in ids:
            cache.context(store, session_id)
    assert cache.stats.built == 100
    assert cache.stats.hits == 100


def test_a6_each_model_call_extends_the_kept_context(tmp_path: Path) -> None:
    """Through the runtime: a turn of several passes builds its context once, then only extends it, and
    every request carries exactly the messages a rebuild gives."""

    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            session = await h.session()
            h.model.enqueue(
                [ToolCallEvent(call_id="a", name="echo", arguments={"text": "one"})],
                [ToolCallEvent(call_id="b", name="echo", arguments={"text": "two"})],
                "done",
            )
            await h.send(session.id, "go")
            await h.state("completed")
            assert h.deps is not None
            contexts = h.deps.contexts
            assert contexts.stats.built == 1
            assert contexts.stats.extended == 2
            assert contexts.stats.told == 2  # from the entries it announced: the store was not asked
            expected = await h.deps.owner.call(
                lambda s: context_to_messages(
                    s.context(session.id), context_attachments(s, session.id, s.context(session.id))
                )
            )
            assert list(h.model.requests[-1].messages) == expected[: len(h.model.requests[-1].messages)]
            assert len(h.model.requests[-1].messages) == len(expected) - 1  # all but the final answer

    asyncio.run(scenario())


def test_a6_the_messages_come_with_the_checkpoints_unit_of_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each pass's messages are made in the checkpoint's unit of work on the store's thread (one hand-off
    fewer per model call), and are the messages of the context that unit read."""

    async def scenario() -> None:
        async with Harness(tmp_path) as h:
            assert h.deps is not None
            contexts = h.deps.contexts
            units: list[list[str]] = []
            submit, context, messages = h.owner.submit, contexts.context, contexts.messages

            def unit(fn: Any) -> Any:
                def marked(store: SessionStore) -> Any:
                    units.append([])
                    return fn(store)

                return submit(marked)

            def asked(name: str, method: Any) -> Any:
                def noted(*args: Any) -> Any:
                    units[-1].append(name)
                    return method(*args)

                return noted

            monkeypatch.setattr(h.owner, "submit", unit)
            monkeypatch.setattr(contexts, "context", asked("context", context))
            monkeypatch.setattr(contexts, "messages", asked("messages", messages))
            session = await h.session()
            h.model.enqueue([ToolCallEvent(call_id="a", name="echo", arguments={"text": "one"})], "done")
            await h.send(session.id, "go")
            await h.state("completed")
            with_messages = [asked for asked in units if "messages" in asked]
            assert with_messages == [["context", "messages"], ["context", "messages"]]  # two passes

    asyncio.run(scenario())
