"""A2/A3: every kind of entry a session keeps round-trips, large bodies go through objects, the head lasts."""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec
import pytest

from anyy.domain.entries import (
    AnswerData,
    AssistantData,
    Attachment,
    BranchSummaryData,
    CompactionData,
    Entry,
    EntryKind,
    LabelData,
    ModelChangeData,
    NewEntry,
    NoticeData,
    QuestionData,
    ToolCallData,
    Usage,
)
from anyy.domain.errors import Conflict, InvalidInput, NotFound
from anyy.storage.protocol import SessionStore
from tests.conformance.conftest import Reopen
from tests.conformance.support import BIG, assistant, ids, new_session, texts, tool_call, tool_result, user


def _check_same(got: Entry, new: NewEntry, parent: int | None) -> None:
    assert got.kind == new.kind
    assert got.text == new.text
    assert got.parent == parent
    expected: Any = {} if new.data is None else msgspec.to_builtins(new.data)
    assert got.data == expected
    if new.data is not None:
        assert got.payload() == new.data


def _every_kind(store: SessionStore, session_id: str) -> list[Entry]:
    """Append one entry of each kind (the ones pointing at other entries point at real ones)."""
    photo = store.put_object(b"\x89PNG fake image bytes", media_type="image/png")
    notes = store.put_object("notes with accents: é, ü, 漢字".encode(), media_type="text/plain")
    first = store.append_entries(
        session_id,
        [
            user(
                "look at these",
                [
                    Attachment(object=photo.hash, name="photo.png", media_type="image/png", size=photo.size),
                    Attachment(object=notes.hash, name="notes.txt", media_type="text/plain", size=notes.size),
                ],
            ),
            assistant(
                "A photo and notes.",
                usage=Usage(input=1200, output=40, cache_read=300, cache_write=7),
                model="echo-1",
                stop_reason="tool_use",
            ),
            tool_call("call-1", "read_file", {"path": "notes.txt", "lines": [1, 2], "deep": {"x": None}}),
            tool_result("call-1", "file content\nline 2", is_error=True),
            NewEntry(kind=EntryKind.QUESTION, text="Which one?", data=QuestionData(call_id="call-2")),
        ],
    )
    question = first[-1]
    rest = store.append_entries(
        session_id,
        [
            NewEntry(kind=EntryKind.ANSWER, text="The second.", data=AnswerData(question=question.id)),
            NewEntry(
                kind=EntryKind.COMPACTION,
                text="Summary: the user showed a photo.",
                data=CompactionData(first_kept=question.id, tokens_before=1547),
            ),
            NewEntry(
                kind=EntryKind.BRANCH_SUMMARY,
                text="We tried another way.",
                data=BranchSummaryData(from_entry=first[1].id),
            ),
            NewEntry(kind=EntryKind.LABEL, text="checkpoint", data=LabelData(target=first[0].id)),
            NewEntry(
                kind=EntryKind.MODEL_CHANGE, data=ModelChangeData(provider="anthropic", model="claude", effort="high")
            ),
            NewEntry(kind=EntryKind.NOTICE, text="The gateway restarted.", data=NoticeData(level="warning")),
        ],
    )
    return first + rest


def _news(entries: list[Entry]) -> list[NewEntry]:
    return [NewEntry(kind=e.kind, text=e.text, data=e.payload() if e.data else None) for e in entries]


def test_a2_every_entry_kind_round_trips(store: SessionStore, reopen: Reopen) -> None:
    session = new_session(store, "kinds")
    appended = _every_kind(store, session.id)
    assert {e.kind for e in appended} == set(EntryKind)
    assert len(set(ids(appended))) == len(appended)

    for read in (store.path(session.id), [store.get_entry(session.id, e.id) for e in appended]):
        assert read == appended

    store = reopen(store)
    assert store.path(session.id) == appended
    parent = None
    for entry, new in zip(store.path(session.id), _news(appended), strict=True):
        _check_same(entry, new, parent)
        parent = entry.id


def test_a2_typed_payloads_come_back(store: SessionStore) -> None:
    session = new_session(store)
    appended = _every_kind(store, session.id)
    by_kind = {e.kind: e for e in store.path(session.id)}
    reply = by_kind[EntryKind.ASSISTANT].payload()
    assert isinstance(reply, AssistantData)
    assert reply.model == "echo-1"
    assert reply.stop_reason == "tool_use"
    assert reply.usage == Usage(input=1200, output=40, cache_read=300, cache_write=7)
    call = by_kind[EntryKind.TOOL_CALL].payload()
    assert isinstance(call, ToolCallData)
    assert call.arguments == {"path": "notes.txt", "lines": [1, 2], "deep": {"x": None}}
    assert by_kind[EntryKind.ANSWER].data == {"question": appended[4].id}


def test_a3_attachments_are_objects_read_back_whole(store: SessionStore, reopen: Reopen) -> None:
    session = new_session(store)
    blob = bytes(range(256)) * 300
    ref = store.put_object(blob, media_type="application/pdf")
    assert ref.size == len(blob)
    assert ref.media_type == "application/pdf"
    assert store.put_object(blob, media_type="application/pdf").hash == ref.hash  # content-addressed
    (entry,) = store.append_entries(
        session.id, [user("see attached", [Attachment(object=ref.hash, name="a.pdf", size=ref.size)])]
    )
    store = reopen(store)
    (got,) = store.path(session.id)
    assert got.data["attachments"][0]["object"] == ref.hash
    assert store.read_object(got.data["attachments"][0]["object"]) == blob
    assert got == entry


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param(user, id="user"),
        pytest.param(lambda body: assistant(body, usage=Usage(input=9, output=9)), id="assistant"),
        pytest.param(lambda body: tool_result("c1", body), id="tool_result"),
        pytest.param(
            lambda body: NewEntry(kind=EntryKind.COMPACTION, text=body, data=CompactionData(first_kept=1)),
            id="compaction",
        ),
    ],
)
def test_a3_large_bodies_round_trip_through_objects(store: SessionStore, reopen: Reopen, entry: Any) -> None:
    session = new_session(store)
    small = "small body"
    body = ("large body ✓ — " * (BIG // 8))[: BIG + 1000]
    assert len(body) > BIG
    appended = store.append_entries(session.id, [user(small), entry(body), user("after")])
    assert texts(appended) == [small, body, "after"]
    assert appended[0].object is None
    large = appended[1]
    assert large.object is not None
    assert store.read_object(large.object).decode("utf-8") == body

    store = reopen(store)
    assert texts(store.path(session.id)) == [small, body, "after"]
    assert store.get_entry(session.id, large.id).text == body
    assert texts(store.history(session.id).items) == ["after", body, small]
    context = store.context(session.id)
    if entry(body).kind == EntryKind.COMPACTION:
        assert context.summary == body
    else:
        assert body in [item[2] for item in context.items]


def test_a3_tree_preview_of_a_large_body_is_its_beginning(store: SessionStore) -> None:
    session = new_session(store)
    body = "The beginning of a long paste. " + "x" * (BIG + 10)
    (entry,) = store.append_entries(session.id, [user(body)])
    (node,) = store.tree(session.id).nodes
    assert node.id == entry.id
    assert node.preview.startswith("The beginning of a long paste.")


def test_a2_head_is_durable_across_reopen(store: SessionStore, reopen: Reopen) -> None:
    session = new_session(store)
    assert session.head is None
    appended = store.append_entries(session.id, [user("one"), assistant("two")])
    assert store.get_session(session.id).head == appended[-1].id
    more = store.append_entries(session.id, [user("three")])
    store = reopen(store)
    assert store.get_session(session.id).head == more[0].id
    assert texts(store.path(session.id)) == ["one", "two", "three"]
    assert store.path(session.id)[-1].parent == appended[-1].id


def test_a2_entries_of_one_append_are_a_chain_under_the_head(store: SessionStore) -> None:
    session = new_session(store)
    (root,) = store.append_entries(session.id, [user("root")])
    batch = store.append_entries(session.id, [assistant("a"), tool_call("c"), tool_result("c", "r")])
    assert [e.parent for e in batch] == [root.id, batch[0].id, batch[1].id]
    assert store.path(session.id, to=batch[1].id) == [root, batch[0], batch[1]]


def test_a2_sessions_keep_their_settings(store: SessionStore, reopen: Reopen) -> None:
    from anyy.domain.sessions import Goal, NewSession, SessionPatch

    session = store.create_session(
        NewSession(kind="background", title="nightly", role="scribe", provider="p", model="m", effort="low")
    )
    store.update_session(session.id, SessionPatch(model="m2", goal=Goal(text="ship it"), steering_mode="all"))
    store = reopen(store)
    got = store.get_session(session.id)
    assert (got.kind, got.title, got.role, got.provider, got.model, got.effort) == (
        "background",
        "nightly",
        "scribe",
        "p",
        "m2",
        "low",
    )
    assert got.goal == Goal(text="ship it")
    assert got.steering_mode == "all"
    assert got.follow_up_mode == "one-at-a-time"


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(NewEntry(kind=EntryKind.TOOL_CALL), id="tool_call-without-data"),
        pytest.param(NewEntry(kind=EntryKind.TOOL_CALL, data={"call_id": 5, "name": "x"}), id="tool_call-wrong-type"),
        pytest.param(NewEntry(kind=EntryKind.TOOL_RESULT, data={"name": "x"}), id="tool_result-missing-call_id"),
        pytest.param(NewEntry(kind=EntryKind.ANSWER, data={"question": "first"}), id="answer-question-not-an-id"),
        pytest.param(NewEntry(kind=EntryKind.LABEL, text="x"), id="label-without-target"),
        pytest.param(NewEntry(kind=EntryKind.COMPACTION, data={"first_kept": None}), id="compaction-no-cut"),
        pytest.param(NewEntry(kind=EntryKind.LABEL, data=ToolCallData(call_id="c", name="n")), id="wrong-struct"),
        pytest.param(NewEntry(kind=EntryKind.NOTICE, data={"level": "panic"}), id="notice-unknown-level"),
        pytest.param(
            NewEntry(kind=EntryKind.USER, data={"attachments": [{"name": "no object"}]}), id="attachment-no-object"
        ),
        pytest.param(
            user("x", [Attachment(object="0" * 64, name="never uploaded")]), id="attachment-object-not-uploaded"
        ),
        pytest.param(user("x", [Attachment(object="../etc/passwd", name="p")]), id="attachment-object-not-a-hash"),
    ],
)
def test_a2_invalid_data_for_a_kind_is_invalid_input(store: SessionStore, bad: NewEntry) -> None:
    session = new_session(store)
    (before,) = store.append_entries(session.id, [user("kept")])
    with pytest.raises(InvalidInput):
        store.append_entries(session.id, [user("valid, but in a batch with an invalid one"), bad])
    assert store.get_session(session.id).head == before.id
    assert store.path(session.id) == [before]


def test_a2_appending_nothing_is_invalid_input(store: SessionStore) -> None:
    session = new_session(store)
    with pytest.raises(InvalidInput):
        store.append_entries(session.id, [])


def test_a2_unknown_entry_kind_is_invalid_input(store: SessionStore) -> None:
    session = new_session(store)
    bad = NewEntry(kind=99)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        store.append_entries(session.id, [bad])


def test_a1_unknown_ids_are_not_found(store: SessionStore) -> None:
    session = new_session(store)
    (entry,) = store.append_entries(session.id, [user("x")])
    other = new_session(store)
    with pytest.raises(NotFound):
        store.get_session("ses_doesnotexist")
    with pytest.raises(NotFound):
        store.append_entries("ses_doesnotexist", [user("x")])
    with pytest.raises(NotFound):
        store.get_entry(session.id, entry.id + 1000)
    with pytest.raises(NotFound):
        store.get_entry(other.id, entry.id)  # an entry of another session's tree
    with pytest.raises(NotFound):
        store.path(other.id, to=entry.id)
    with pytest.raises(NotFound):
        store.read_object("f" * 64)


def test_a3_a_refused_append_leaves_no_object_behind(store: SessionStore) -> None:
    session = new_session(store)
    big = "an unsent draft " + "d" * (BIG + 1)
    digest = hashlib.sha256(big.encode()).hexdigest()
    with pytest.raises(InvalidInput):
        store.append_entries(session.id, [user(big), NewEntry(kind=EntryKind.LABEL, text="x", data=None)])
    with pytest.raises(Conflict):
        store.append_entries(session.id, [user(big)], expected_head=12345)
    with pytest.raises(NotFound):
        store.read_object(digest)
    assert store.path(session.id) == []
    (entry,) = store.append_entries(session.id, [user(big)])
    assert entry.object == digest
    assert store.read_object(digest) == big.encode()


@pytest.mark.parametrize("size", [10, BIG + 10])
def test_a2_text_that_is_not_unicode_is_invalid_input_and_writes_nothing(store: SessionStore, size: int) -> None:
    session = new_session(store)
    store.append_entries(session.id, [user("before")])
    with pytest.raises(InvalidInput, match="not valid Unicode"):
        store.append_entries(session.id, [user("x" * size + "\ud800")])
    assert texts(store.path(session.id)) == ["before"]
    store.append_entries(session.id, [user("after")])
    assert texts(store.path(session.id)) == ["before", "after"]


def test_g5_object_bytes_count_each_stored_object_once(store: SessionStore) -> None:
    """What the upload quota counts: the bytes of every object, a duplicate stored once."""
    assert store.object_bytes() == 0
    store.put_object(b"a" * 1000)
    store.put_object(b"b" * 24, media_type="text/plain")
    store.put_object(b"a" * 1000)  # the same content: one object
    assert store.object_bytes() == 1024
